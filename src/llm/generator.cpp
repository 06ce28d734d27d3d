// The generation loop: the prompt in chunks, then one run per new token, the
// KV cache in a state of the session's, made per call.
#include "opgraph/llm/generator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "opgraph/core/error.h"

namespace opgraph::llm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  OPGRAPH_CHECK(file, "cannot read '", path.string(), "'");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// What the graph's inputs tell the Generator, checked against its form (see generator.h).
struct GraphInputs {
  std::string batch_symbol;  // input_ids' batch dimension where it is a symbol
  bool position_ids = false;
  bool attention_mask = false;
};

GraphInputs check_inputs(const Session& session, const std::string& model, int64_t max_seq_len) {
  std::string given;
  for (const ValueInfo& input : session.inputs())
    given += (given.empty() ? "" : ", ") + input.name + ": " + input.type_str();
  const auto fail = [&](const std::string& why) {
    throw Error(detail::concat(model,
                               ": a Generator runs a graph with the inputs input_ids: int64[B, T], cache_position: "
                               "int64[T] and, to decode batches, attention_mask: int64[B, ",
                               max_seq_len, "] and position_ids: int64[B, T]; this one takes ", given, " (", why, ")"));
  };
  const auto find = [&](std::string_view name) -> const ValueInfo* {
    for (const ValueInfo& input : session.inputs())
      if (input.name == name) return &input;
    return nullptr;
  };
  struct Expected {
    const char* name;
    size_t rank;
    bool required;
  };
  const Expected expected[] = {
      {"input_ids", 2, true}, {"cache_position", 1, true}, {"attention_mask", 2, false}, {"position_ids", 2, false}};
  size_t found = 0;
  for (const Expected& want : expected) {
    const ValueInfo* input = find(want.name);
    if (input == nullptr && want.required) fail(detail::concat(want.name, " is missing"));
    if (input == nullptr) continue;
    ++found;
    if (input->dtype != DType::Int64 || input->shape.size() != want.rank)
      fail(detail::concat(want.name, " should be int64 with ", want.rank, " dimensions"));
  }
  if (found != session.inputs().size()) fail("it takes inputs a Generator does not give");
  const ValueInfo* mask = find("attention_mask");
  if (mask != nullptr && mask->shape[1] != Dim(max_seq_len))
    fail(detail::concat("attention_mask's second dimension should be max_seq_len, ", max_seq_len));
  return {.batch_symbol = find("input_ids")->shape[0].symbol,
          .position_ids = find("position_ids") != nullptr,
          .attention_mask = mask != nullptr};
}

struct GenerationConfig {
  std::vector<int32_t> eos;
  int64_t max_seq_len = 0;
};

GenerationConfig read_generation_config(const std::filesystem::path& path) {
  using nlohmann::json;
  json config;
  try {
    config = json::parse(read_text(path));
  } catch (const json::exception& e) {
    throw Error(detail::concat(path.string(), ": not valid JSON: ", e.what()));
  }
  GenerationConfig read;
  const json eos = config.value("eos_token_id", json());
  for (const json& id : eos.is_array() ? eos : json::array({eos})) {
    if (id.is_null()) continue;
    OPGRAPH_CHECK(id.is_number_integer(), path.string(), ": eos_token_id must be an int or a list of ints, got ",
                  eos.dump());
    read.eos.push_back(id.get<int32_t>());
  }
  const json max_seq_len = config.value("max_seq_len", json());
  OPGRAPH_CHECK(max_seq_len.is_number_integer() && max_seq_len.get<int64_t>() > 0, path.string(),
                ": max_seq_len must be a positive int (the length of the KV cache), got ", max_seq_len.dump());
  read.max_seq_len = max_seq_len.get<int64_t>();
  return read;
}

// The sizes of the runs a prompt of `tokens` is prefilled in: `chunk` each,
// but for the last two, which share their tokens evenly. A last run of a few
// tokens would multiply on other kernels than the runs before it, each with
// a packed copy of every weight of its own (oneDNN's layout below 128 rows,
// MKL's from 128): Qwen2.5-0.5B in float32 peaked at 5.1 GB for a 600-token
// prompt in runs of 512 and 88, at 3.7 GB in two of 300.
std::vector<int64_t> prefill_runs(int64_t tokens, int64_t chunk) {
  std::vector<int64_t> runs(static_cast<size_t>(tokens / chunk), chunk);
  if (tokens % chunk != 0) runs.push_back(tokens % chunk);
  if (runs.size() >= 2) {
    const int64_t last_two = runs[runs.size() - 2] + runs.back();
    runs[runs.size() - 2] = (last_two + 1) / 2;
    runs.back() = last_two / 2;
  }
  return runs;
}

Tensor int64_tensor(Shape shape, std::span<const int64_t> values) {
  Tensor t = Tensor::empty(std::move(shape), DType::Int64);
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::EndOfSequence: return "eos";
    case StopReason::StopString: return "stop";
    case StopReason::MaxNewTokens: return "max_new_tokens";
    case StopReason::MaxSequenceLength: return "max_seq_len";
  }
  return "?";
}

Generator::Generator(const std::string& folder, GeneratorOptions options) : folder_(folder), options_(options) {
  const std::filesystem::path root(folder);
  const std::filesystem::path model = root / "model.opg";
  OPGRAPH_CHECK(std::filesystem::exists(model), "'", folder,
                "' has no model.opg: a Generator reads a folder that opgraph.llm.export wrote");
  OPGRAPH_CHECK(options.prefill_chunk >= 1, "prefill_chunk: expected 1 or more, got ", options.prefill_chunk);
  session_ = std::make_unique<Session>(
      model.string(),
      SessionOptions{.threads = options.threads, .precision = options.precision, .weights = options.weights});
  const std::string name = model.string();
  OPGRAPH_CHECK(!session_->states().empty(), name,
                " has no KV cache (the graph declares no state): a Generator runs a model whose cache persists "
                "between runs, as opgraph.llm.export writes it");
  const ValueInfo& logits = session_->outputs().at(0);
  OPGRAPH_CHECK(logits.dtype == DType::Float32 && !logits.shape.empty() && !logits.shape.back().is_symbolic(), name,
                ": its first output should be the logits, float32[B, T, V] or [B, V], got ", logits.type_str());
  vocab_size_ = logits.shape.back().size;
  const GenerationConfig config = read_generation_config(root / "generation_config.json");
  eos_ = config.eos;
  max_seq_len_ = config.max_seq_len;
  const GraphInputs inputs = check_inputs(*session_, name, max_seq_len_);
  batch_symbol_ = inputs.batch_symbol;
  position_ids_ = inputs.position_ids;
  attention_mask_ = inputs.attention_mask;
  if (std::filesystem::exists(root / "tokenizer.json"))
    tokenizer_ = Tokenizer::from_file((root / "tokenizer.json").string());
}

namespace {

// One sequence of a batch, left-padded to the longest prompt, and what it has generated so far.
struct Sequence {
  std::span<const int32_t> prompt;
  int64_t padding = 0;  // cache positions before its first token
  Sampler sampler;
  std::vector<int32_t> seen;  // the prompt and the new tokens, for the repetition penalty
  std::optional<TokenStreamDecoder> decoder = {};
  GenerationResult result = {};
  bool done = false;

  // The token at cache position `position`: a pad (any id; the attention mask hides it) before the prompt.
  int64_t token_at(int64_t position) const {
    if (position < padding) return 0;
    const auto index = static_cast<size_t>(position - padding);
    return index < prompt.size() ? prompt[index] : seen.back();
  }
};

// Adds `token` to the sequence and says whether it ended it (eos, or a stop string in the text so far).
bool append(Sequence& sequence, int32_t token, const std::vector<int32_t>& eos, const GenerationOptions& options,
            const std::function<void(int32_t, std::string_view)>& on_token) {
  GenerationResult& result = sequence.result;
  if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
    result.reason = StopReason::EndOfSequence;
    return true;
  }
  result.tokens.push_back(token);
  sequence.seen.push_back(token);
  const std::string piece = sequence.decoder ? sequence.decoder->push(token) : std::string();
  result.text += piece;
  if (on_token) on_token(token, piece);
  for (const std::string& stop : options.stop) {
    const size_t found = stop.empty() ? std::string::npos : result.text.find(stop);
    if (found == std::string::npos) continue;
    result.text.resize(found);
    result.reason = StopReason::StopString;
    return true;
  }
  return false;
}

}  // namespace

std::vector<GenerationResult> Generator::generate_batch(std::span<const std::vector<int32_t>> prompts,
                                                        const GenerationOptions& options,
                                                        const BatchTokenCallback& on_token) const {
  options.sampling.check();
  OPGRAPH_CHECK(options.max_new_tokens >= 0, "max_new_tokens: expected 0 or more, got ", options.max_new_tokens);
  OPGRAPH_CHECK(!prompts.empty(), "no prompts given");
  OPGRAPH_CHECK(options.stop.empty() || tokenizer_, "stop strings need a tokenizer, and '", folder_, "' has none");
  const auto name = [&](size_t p) {
    return prompts.size() == 1 ? std::string("the prompt") : detail::concat("prompt ", p);
  };
  for (size_t p = 0; p < prompts.size(); ++p) {
    const std::vector<int32_t>& prompt = prompts[p];
    OPGRAPH_CHECK(!prompt.empty(), name(p), " has no tokens");
    OPGRAPH_CHECK(static_cast<int64_t>(prompt.size()) <= max_seq_len_, name(p), " has ", prompt.size(),
                  " tokens, more than the model's max_seq_len of ", max_seq_len_);
    for (size_t i = 0; i < prompt.size(); ++i) {
      OPGRAPH_CHECK(prompt[i] >= 0 && prompt[i] < vocab_size_, name(p), ": token ", i, " is ", prompt[i],
                    ", outside the vocabulary [0, ", vocab_size_, ")");
    }
  }
  std::vector<std::span<const int32_t>> spans(prompts.begin(), prompts.end());
  if (batches()) return decode(spans, options, on_token);
  std::vector<GenerationResult> results;
  for (size_t p = 0; p < spans.size(); ++p) {
    const BatchTokenCallback shifted =
        on_token ? [&, p](size_t, int32_t token, std::string_view text) { on_token(p, token, text); }
                 : BatchTokenCallback();
    results.push_back(std::move(decode(std::span(&spans[p], 1), options, shifted).front()));
  }
  return results;
}

std::vector<GenerationResult> Generator::decode(std::span<const std::span<const int32_t>> prompts,
                                                const GenerationOptions& options,
                                                const BatchTokenCallback& on_token) const {
  const auto rows = static_cast<int64_t>(prompts.size());
  int64_t length = 0;
  for (std::span<const int32_t> prompt : prompts) length = std::max(length, static_cast<int64_t>(prompt.size()));
  std::vector<Sequence> sequences;
  for (std::span<const int32_t> prompt : prompts) {
    Sequence& sequence = sequences.emplace_back(Sequence{.prompt = prompt,
                                                         .padding = length - static_cast<int64_t>(prompt.size()),
                                                         .sampler = Sampler(options.sampling),
                                                         .seen = {prompt.begin(), prompt.end()}});
    if (tokenizer_) sequence.decoder.emplace(*tokenizer_, /*skip_special_tokens=*/true);
    sequence.result.prompt_tokens = static_cast<int64_t>(prompt.size());
  }
  State state = batch_symbol_.empty() ? session_->new_state() : session_->new_state({{batch_symbol_, rows}});
  // The same for every run: 0 at each row's padding.
  Tensor mask = Tensor::empty({rows, max_seq_len_}, DType::Int64);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t* row = mask.data_ptr<int64_t>() + r * max_seq_len_;
    std::fill_n(row, sequences[r].padding, 0);
    std::fill_n(row + sequences[r].padding, max_seq_len_ - sequences[r].padding, 1);
  }

  // Runs cache positions [first, first + count) of every row; returns each row's last logits.
  const auto forward = [&](int64_t first, int64_t count) {
    std::vector<int64_t> ids, positions, cache_positions(static_cast<size_t>(count));
    for (const Sequence& sequence : sequences) {
      for (int64_t position = first; position < first + count; ++position) {
        ids.push_back(sequence.token_at(position));
        positions.push_back(std::max<int64_t>(position - sequence.padding, 0));
      }
    }
    for (int64_t i = 0; i < count; ++i) cache_positions[static_cast<size_t>(i)] = first + i;
    std::vector<std::pair<std::string, Tensor>> inputs = {{"input_ids", int64_tensor({rows, count}, ids)},
                                                          {"cache_position", int64_tensor({count}, cache_positions)}};
    if (attention_mask_) inputs.emplace_back("attention_mask", mask);
    if (position_ids_) inputs.emplace_back("position_ids", int64_tensor({rows, count}, positions));
    return session_->run(std::span<const std::pair<std::string, Tensor>>(inputs), &state).at(0);
  };
  const auto last_logits = [&](const Tensor& logits, int64_t row) {
    const int64_t per_row = logits.numel() / rows;
    return std::span(logits.data_ptr<const float>() + (row + 1) * per_row - vocab_size_,
                     static_cast<size_t>(vocab_size_));
  };

  const Clock::time_point start = Clock::now();
  Tensor logits;
  int64_t first = 0;
  for (const int64_t count : prefill_runs(length, options_.prefill_chunk)) {
    logits = forward(first, count);
    first += count;
  }
  const double prompt_seconds = seconds_since(start);
  const Clock::time_point decode_start = Clock::now();
  int64_t position = length;
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    if (step > 0) {
      const bool all_done = std::all_of(sequences.begin(), sequences.end(), [](const Sequence& s) { return s.done; });
      if (all_done) break;
      if (position >= max_seq_len_) {
        for (Sequence& sequence : sequences)
          if (!sequence.done) sequence.result.reason = StopReason::MaxSequenceLength;
        break;
      }
      logits = forward(position++, 1);
    }
    for (int64_t r = 0; r < rows; ++r) {
      Sequence& sequence = sequences[r];
      if (sequence.done) continue;
      const int32_t token = sequence.sampler.next(last_logits(logits, r), sequence.seen);
      sequence.done = append(sequence, token, eos_, options, [&](int32_t t, std::string_view text) {
        if (on_token) on_token(static_cast<size_t>(r), t, text);
      });
    }
  }
  const double decode_seconds = seconds_since(decode_start);
  std::vector<GenerationResult> results;
  for (Sequence& sequence : sequences) {
    GenerationResult& result = sequence.result;
    if (sequence.decoder && result.reason != StopReason::StopString) result.text += sequence.decoder->finish();
    result.prompt_seconds = prompt_seconds;
    result.decode_seconds = decode_seconds;
    results.push_back(std::move(result));
  }
  return results;
}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                     const TokenCallback& on_token) const {
  const std::vector<int32_t> prompts[] = {{prompt.begin(), prompt.end()}};
  const BatchTokenCallback callback =
      on_token ? [&](size_t, int32_t token, std::string_view text) { on_token(token, text); } : BatchTokenCallback();
  return std::move(generate_batch(prompts, options, callback).front());
}

GenerationResult Generator::generate(std::string_view prompt, const GenerationOptions& options,
                                     const TokenCallback& on_token) const {
  OPGRAPH_CHECK(tokenizer_, "a text prompt needs a tokenizer, and '", folder_,
                "' has no tokenizer.json; give token ids, or export with a tokenizer");
  const std::vector<int32_t> ids = tokenizer_->encode(prompt);
  return generate(std::span<const int32_t>(ids), options, on_token);
}

}  // namespace opgraph::llm

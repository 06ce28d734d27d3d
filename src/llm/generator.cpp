// The generation loop: the prompt in chunks, then one run per new token, the
// KV cache in a state of the session's, made per call.
#include "opgraph/llm/generator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

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

// The graph's `name` input, which must be int64 of `rank` dimensions.
void check_input(const Session& session, const std::string& model, const char* name, size_t rank, const char* form) {
  const std::vector<ValueInfo>& inputs = session.inputs();
  const auto it = std::find_if(inputs.begin(), inputs.end(), [&](const ValueInfo& v) { return v.name == name; });
  std::string given;
  for (const ValueInfo& input : inputs) given += (given.empty() ? "" : ", ") + input.name + ": " + input.type_str();
  OPGRAPH_CHECK(it != inputs.end() && it->dtype == DType::Int64 && it->shape.size() == rank && inputs.size() == 2,
                model,
                ": a Generator runs a graph with the inputs input_ids: int64[1, T] and cache_position: "
                "int64[T]; this one takes ",
                given, " (", name, " should be ", form, ")");
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
  session_ = std::make_unique<Session>(model.string(),
                                       SessionOptions{.threads = options.threads, .precision = options.precision});
  const std::string name = model.string();
  OPGRAPH_CHECK(!session_->states().empty(), name,
                " has no KV cache (the graph declares no state): a Generator runs a model whose cache persists "
                "between runs, as opgraph.llm.export writes it");
  check_input(*session_, name, "input_ids", 2, "int64[1, T]");
  check_input(*session_, name, "cache_position", 1, "int64[T]");
  const ValueInfo& logits = session_->outputs().at(0);
  OPGRAPH_CHECK(logits.dtype == DType::Float32 && !logits.shape.empty() && !logits.shape.back().is_symbolic(), name,
                ": its first output should be the logits, float32[1, T, V] or [1, V], got ", logits.type_str());
  vocab_size_ = logits.shape.back().size;
  const GenerationConfig config = read_generation_config(root / "generation_config.json");
  eos_ = config.eos;
  max_seq_len_ = config.max_seq_len;
  if (std::filesystem::exists(root / "tokenizer.json"))
    tokenizer_ = Tokenizer::from_file((root / "tokenizer.json").string());
}

std::vector<float> Generator::forward(std::span<const int32_t> tokens, int64_t start, State& state) const {
  const auto count = static_cast<int64_t>(tokens.size());
  std::vector<int64_t> ids(tokens.begin(), tokens.end()), positions(tokens.size());
  for (int64_t i = 0; i < count; ++i) positions[static_cast<size_t>(i)] = start + i;
  const std::vector<Tensor> outputs = session_->run(
      {{"input_ids", int64_tensor({1, count}, ids)}, {"cache_position", int64_tensor({count}, positions)}}, &state);
  const Tensor& logits = outputs.at(0);
  const auto* last = logits.data_ptr<const float>() + logits.numel() - vocab_size_;
  return {last, last + vocab_size_};
}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                     const TokenCallback& on_token) const {
  options.sampling.check();
  OPGRAPH_CHECK(options.max_new_tokens >= 0, "max_new_tokens: expected 0 or more, got ", options.max_new_tokens);
  OPGRAPH_CHECK(!prompt.empty(), "the prompt has no tokens");
  OPGRAPH_CHECK(static_cast<int64_t>(prompt.size()) <= max_seq_len_, "the prompt has ", prompt.size(),
                " tokens, more than the model's max_seq_len of ", max_seq_len_);
  for (size_t i = 0; i < prompt.size(); ++i) {
    OPGRAPH_CHECK(prompt[i] >= 0 && prompt[i] < vocab_size_, "prompt token ", i, " is ", prompt[i],
                  ", outside the vocabulary [0, ", vocab_size_, ")");
  }
  OPGRAPH_CHECK(options.stop.empty() || tokenizer_, "stop strings need a tokenizer, and '", folder_, "' has none");

  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  State state = session_->new_state();
  Sampler sampler(options.sampling);
  std::vector<int32_t> seen(prompt.begin(), prompt.end());
  std::optional<TokenStreamDecoder> decoder;
  if (tokenizer_) decoder.emplace(*tokenizer_, /*skip_special_tokens=*/true);

  const Clock::time_point start = Clock::now();
  std::vector<float> logits;
  for (size_t first = 0; first < prompt.size(); first += static_cast<size_t>(options_.prefill_chunk)) {
    const size_t count = std::min(prompt.size() - first, static_cast<size_t>(options_.prefill_chunk));
    logits = forward(prompt.subspan(first, count), static_cast<int64_t>(first), state);
  }
  result.prompt_seconds = seconds_since(start);
  const Clock::time_point decode_start = Clock::now();
  auto position = static_cast<int64_t>(prompt.size());
  result.reason = StopReason::MaxNewTokens;
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    if (step > 0) {
      if (position >= max_seq_len_) {
        result.reason = StopReason::MaxSequenceLength;
        break;
      }
      logits = forward(std::span(&result.tokens.back(), 1), position++, state);
    }
    const int32_t token = sampler.next(logits, seen);
    if (std::find(eos_.begin(), eos_.end(), token) != eos_.end()) {
      result.reason = StopReason::EndOfSequence;
      break;
    }
    result.tokens.push_back(token);
    seen.push_back(token);
    const std::string piece = decoder ? decoder->push(token) : std::string();
    result.text += piece;
    if (on_token) on_token(token, piece);
    const auto stop = std::find_if(options.stop.begin(), options.stop.end(), [&](const std::string& s) {
      return !s.empty() && result.text.find(s) != std::string::npos;
    });
    if (stop != options.stop.end()) {
      result.text.resize(result.text.find(*stop));
      result.reason = StopReason::StopString;
      break;
    }
  }
  if (decoder && result.reason != StopReason::StopString) result.text += decoder->finish();
  result.decode_seconds = seconds_since(decode_start);
  return result;
}

GenerationResult Generator::generate(std::string_view prompt, const GenerationOptions& options,
                                     const TokenCallback& on_token) const {
  OPGRAPH_CHECK(tokenizer_, "a text prompt needs a tokenizer, and '", folder_,
                "' has no tokenizer.json; give token ids, or export with a tokenizer");
  const std::vector<int32_t> ids = tokenizer_->encode(prompt);
  return generate(std::span<const int32_t>(ids), options, on_token);
}

}  // namespace opgraph::llm

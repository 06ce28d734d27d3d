// opgraph generate: text from a folder that opgraph.llm.export wrote,
// streamed to stdout, then the prompt's and the decoding's speed.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "model.h"
#include "opgraph/llm/generator.h"

namespace opgraph::cli {
namespace {

double parse_number(std::string_view flag, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw UsageError(detail::concat(flag, ": expected a number, got '", text, "'"));
  return value;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    ids.push_back(static_cast<int32_t>(parse_integer("--prompt-ids", item, 0)));
  }
  return ids;
}

int generate_main(const Args& args) {
  if (args.has("--prompt") == args.has("--prompt-ids")) {
    throw UsageError("give the prompt as --prompt TEXT or as --prompt-ids 1,2,3, one of the two");
  }
  const SessionOptions session = session_options(args);
  const llm::Generator generator(
      args.operand(), {.threads = session.threads, .precision = session.precision, .weights = session.weights});
  llm::GenerationOptions options{.max_new_tokens = args.integer("-n", 128, 0)};
  if (args.has("--temperature"))
    options.sampling.temperature = parse_number("--temperature", args.required("--temperature"));
  if (args.has("--top-k")) options.sampling.top_k = args.integer("--top-k", 0, 1);
  if (args.has("--top-p")) options.sampling.top_p = parse_number("--top-p", args.required("--top-p"));
  if (args.has("--seed")) options.sampling.seed = static_cast<uint64_t>(args.integer("--seed", 0, 0));
  for (const std::string& stop : args.values("--stop")) options.stop.push_back(stop);

  // Text where the folder has a tokenizer, else the ids, as they come.
  const bool text = generator.tokenizer().has_value();
  const auto print = [&](int32_t token, std::string_view piece) {
    if (text) {
      std::cout << piece << std::flush;
    } else {
      std::cout << token << ' ' << std::flush;
    }
  };
  const llm::GenerationResult result =
      args.has("--prompt")
          ? generator.generate(args.required("--prompt"), options, print)
          : generator.generate(std::span<const int32_t>(parse_ids(args.required("--prompt-ids"))), options, print);
  const size_t decoded = result.tokens.empty() ? 0 : result.tokens.size() - 1;
  std::cout << "\n";
  std::fprintf(stderr,
               "stopped: %s; prompt: %lld tokens, %.1f tokens/s; time to first token: %.1f ms; decode: %zu tokens, "
               "%.2f tokens/s\n",
               llm::stop_reason_name(result.reason), static_cast<long long>(result.prompt_tokens),
               static_cast<double>(result.prompt_tokens) / result.prompt_seconds, 1e3 * result.prompt_seconds, decoded,
               result.decode_seconds > 0 ? static_cast<double>(decoded) / result.decode_seconds : 0.0);
  return 0;
}

}  // namespace

Command generate_command() {
  return {"generate",
          "FOLDER",
          "generate text with a causal LM saved to FOLDER (model.opg with its KV cache as state)",
          "FOLDER holds model.opg, as opgraph.llm.export writes it: inputs input_ids: int64[B, T] and\n"
          "cache_position: int64[T] (and position_ids: int64[B, T] and attention_mask: int64[B, max_seq_len] where\n"
          "it takes them), the logits first among its outputs, its KV cache as state; generation_config.json\n"
          "(eos_token_id, max_seq_len) and optionally tokenizer.json. The prompt runs as a batch of one. Streams\n"
          "the new text to stdout (the token ids where the folder has no tokenizer), then prints how generation\n"
          "stopped and the prompt's and the decoding's speed to stderr. Greedy unless --temperature.",
          {{"--prompt", "TEXT", "the prompt, which the folder's tokenizer encodes"},
           {"--prompt-ids", "1,2,3", "the prompt as token ids"},
           {"-n", "N", "the most new tokens (default 128)"},
           {"--temperature", "T", "sample at this temperature (default 0: greedy)"},
           {"--top-k", "K", "sample among the K likeliest tokens"},
           {"--top-p", "P", "sample among the likeliest tokens that make up P of the probability"},
           {"--seed", "S", "the seed of the draws"},
           {"--stop", "TEXT", "stop once the text holds TEXT", /*repeatable=*/true},
           threads_flag(),
           precision_flag(),
           weights_flag(),
           group_size_flag(),
           activations_flag()},
          generate_main};
}

}  // namespace opgraph::cli

// Generating tokens with a causal LM exported to a folder (opgraph.llm.export):
// model.opg, generation_config.json and, optionally, tokenizer.json.
//
// The graph takes `input_ids` (int64[B, T]: T new tokens of each of B
// sequences) and `cache_position` (int64[T], where those tokens go in the
// cache) and returns the logits of those positions first (float32[B, T, V], or
// [B, V] for the last one alone). Its KV cache is state (Graph::states), so
// that one graph runs the prompts (many tokens at once, in chunks) and each
// decoding step (one token per sequence). A graph whose batch B is a symbol
// and which takes `attention_mask` (int64[B, max_seq_len]: 0 at a row's
// padding) and, optionally, `position_ids` (int64[B, T]: each token's place in
// its own sequence) decodes a batch of prompts in one run per token, each
// left-padded to the longest, as transformers' generate() pads a batch; other
// graphs (B = 1) run the prompts of a batch one after another.
//
//   opgraph::llm::Generator generator("smollm2");
//   auto result = generator.generate("The capital of France is", {.max_new_tokens = 32},
//                                    [](int32_t, std::string_view text) { std::cout << text << std::flush; });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "opgraph/llm/sampler.h"
#include "opgraph/llm/tokenizer.h"
#include "opgraph/runtime/session.h"

namespace opgraph::llm {

struct GeneratorOptions {
  int threads = 0;  // as SessionOptions::threads
  Precision precision = Precision::Float32;
  WeightQuantization weights = {};  // as SessionOptions::weights
  // The most prompt tokens one run takes; a longer prompt runs in chunks of
  // this many, but for the last two, which share their tokens evenly.
  int64_t prefill_chunk = 512;
};

struct GenerationOptions {
  int64_t max_new_tokens = 128;
  SamplingOptions sampling = {};
  // Stops once the new text contains one of these (needs a tokenizer); the
  // text then ends before it.
  std::vector<std::string> stop = {};
};

enum class StopReason { EndOfSequence, StopString, MaxNewTokens, MaxSequenceLength };
const char* stop_reason_name(StopReason reason);  // "eos", "stop", "max_new_tokens", "max_seq_len"

struct GenerationResult {
  std::vector<int32_t> tokens;  // the new tokens, the end-of-sequence one not among them
  std::string text;             // their text, where the folder has a tokenizer
  StopReason reason = StopReason::MaxNewTokens;
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;  // the prompt's runs up to the first new token: the time to first token
  double decode_seconds = 0;  // the runs after it
};

// Called with each new token and the text it completes (empty while a
// character's bytes are still arriving).
using TokenCallback = std::function<void(int32_t token, std::string_view text)>;
// The same for the sequence of a batch with index `sequence`.
using BatchTokenCallback = std::function<void(size_t sequence, int32_t token, std::string_view text)>;

class Generator {
 public:
  explicit Generator(const std::string& folder, GeneratorOptions options = {});

  // One sequence at a time per call; calls from several threads run at
  // once, each with a state of its own.
  GenerationResult generate(std::span<const int32_t> prompt, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {}) const;
  GenerationResult generate(std::string_view prompt, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {}) const;
  // The prompts decoded together, each giving what it gives alone, except
  // that all of them stop at the cache's end, where the longest prompt reaches
  // it: a run per token for them all where the graph batches (batches()).
  std::vector<GenerationResult> generate_batch(std::span<const std::vector<int32_t>> prompts,
                                               const GenerationOptions& options = {},
                                               const BatchTokenCallback& on_token = {}) const;

  // Whether the graph decodes several sequences in one run.
  bool batches() const { return !batch_symbol_.empty() && attention_mask_; }
  const std::optional<Tokenizer>& tokenizer() const { return tokenizer_; }
  const Session& session() const { return *session_; }
  int64_t max_seq_len() const { return max_seq_len_; }
  int64_t vocab_size() const { return vocab_size_; }
  const std::vector<int32_t>& eos_token_ids() const { return eos_; }

 private:
  std::string folder_;
  GeneratorOptions options_;
  std::unique_ptr<Session> session_;
  std::optional<Tokenizer> tokenizer_;
  std::vector<int32_t> eos_;
  int64_t max_seq_len_ = 0;
  int64_t vocab_size_ = 0;
  std::string batch_symbol_;  // input_ids' batch dimension where it is a symbol, which sizes the states
  bool position_ids_ = false;
  bool attention_mask_ = false;

  std::vector<GenerationResult> decode(std::span<const std::span<const int32_t>> prompts,
                                       const GenerationOptions& options, const BatchTokenCallback& on_token) const;
};

}  // namespace opgraph::llm

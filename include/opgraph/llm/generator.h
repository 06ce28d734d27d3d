// Generating tokens with a causal LM exported to a folder (opgraph.llm.export):
// model.opg, generation_config.json and, optionally, tokenizer.json.
//
// The graph takes `input_ids` (int64[1, T]) and `cache_position` (int64[T],
// where those tokens go in the sequence) and returns the logits of those
// positions first (float32[1, T, V] or [1, V] for the last one alone); its
// KV cache is state (Graph::states), so that one graph runs the prompt (many
// tokens at once, in chunks) and each decoding step (one token).
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
  // The most prompt tokens one run takes; a longer prompt runs in chunks.
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

class Generator {
 public:
  explicit Generator(const std::string& folder, GeneratorOptions options = {});

  // One sequence at a time per call; calls from several threads run at
  // once, each with a state of its own.
  GenerationResult generate(std::span<const int32_t> prompt, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {}) const;
  GenerationResult generate(std::string_view prompt, const GenerationOptions& options = {},
                            const TokenCallback& on_token = {}) const;

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

  // Runs `tokens` at positions [start, start + size) and returns the last one's logits.
  std::vector<float> forward(std::span<const int32_t> tokens, int64_t start, State& state) const;
};

}  // namespace opgraph::llm

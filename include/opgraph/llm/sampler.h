// Choosing the next token from a row of logits, as transformers' generate()
// does: the repetition penalty, then temperature, top-k and top-p, then a
// draw; greedy (the largest logit) at temperature 0.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>

namespace opgraph::llm {

struct SamplingOptions {
  double temperature = 0;                       // 0: greedy; otherwise > 0
  std::optional<int64_t> top_k = std::nullopt;  // keep the k likeliest tokens (k >= 1)
  std::optional<double> top_p = std::nullopt;   // keep the likeliest tokens that reach this mass, in (0, 1]
  // > 0; divides the positive logits of the tokens seen, multiplies their negative ones.
  std::optional<double> repetition_penalty = std::nullopt;
  std::optional<uint64_t> seed = std::nullopt;  // the draws' seed; without one they differ from run to run

  // Throws opgraph::Error naming the option that is out of range.
  void check() const;
};

class Sampler {
 public:
  explicit Sampler(SamplingOptions options);

  // The next token for `logits` (one row, the vocabulary), `seen` the tokens
  // of the sequence so far (the prompt's too), which the repetition penalty reads.
  int32_t next(std::span<const float> logits, std::span<const int32_t> seen);

 private:
  SamplingOptions options_;
  std::mt19937_64 random_;
};

}  // namespace opgraph::llm

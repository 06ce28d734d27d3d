// The order of transformers' logits processors: repetition penalty, then
// temperature, top-k and top-p warpers, then a draw from the softmax.
#include "opgraph/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "opgraph/core/error.h"

namespace opgraph::llm {

void SamplingOptions::check() const {
  OPGRAPH_CHECK(std::isfinite(temperature) && temperature >= 0, "temperature: expected 0 (greedy) or more, got ",
                temperature);
  OPGRAPH_CHECK(!top_k || *top_k >= 1, "top_k: expected 1 or more, got ", top_k.value_or(0));
  OPGRAPH_CHECK(!top_p || (*top_p > 0 && *top_p <= 1), "top_p: expected a value in (0, 1], got ", top_p.value_or(0));
  OPGRAPH_CHECK(!repetition_penalty || (std::isfinite(*repetition_penalty) && *repetition_penalty > 0),
                "repetition_penalty: expected a value above 0, got ", repetition_penalty.value_or(0));
}

Sampler::Sampler(SamplingOptions options)
    : options_(options), random_(options.seed ? *options.seed : std::random_device{}()) {
  options_.check();
}

int32_t Sampler::next(std::span<const float> logits, std::span<const int32_t> seen) {
  OPGRAPH_CHECK(!logits.empty(), "Sampler: the logits row is empty");
  std::vector<float> scores(logits.begin(), logits.end());
  if (options_.repetition_penalty) {
    const auto penalty = static_cast<float>(*options_.repetition_penalty);
    std::vector<bool> penalized(scores.size(), false);
    for (int32_t token : seen) {
      if (token < 0 || static_cast<size_t>(token) >= scores.size() || penalized[token]) continue;
      penalized[token] = true;
      float& score = scores[token];
      score = score > 0 ? score / penalty : score * penalty;
    }
  }
  const auto largest = [&] {
    return static_cast<int32_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
  };
  if (options_.temperature == 0) return largest();

  // The candidates, likeliest first, cut by top-k and then by top-p.
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const auto likelier = [&](int32_t a, int32_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  size_t kept = options_.top_k ? std::min<size_t>(static_cast<size_t>(*options_.top_k), order.size()) : order.size();
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept), order.end(), likelier);
  const auto inverse_temperature = static_cast<float>(1 / options_.temperature);
  const float top = scores[order[0]] * inverse_temperature;
  std::vector<double> weights(kept);
  double total = 0;
  for (size_t i = 0; i < kept; ++i) total += weights[i] = std::exp(scores[order[i]] * inverse_temperature - top);
  if (options_.top_p) {
    // The smallest prefix whose probability reaches top_p (at least one token).
    double mass = 0;
    size_t prefix = 0;
    while (prefix < kept && mass < *options_.top_p * total) mass += weights[prefix++];
    kept = std::max<size_t>(prefix, 1);
    total = std::accumulate(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(kept), 0.0);
  }
  double draw = std::uniform_real_distribution<double>(0, total)(random_);
  for (size_t i = 0; i < kept; ++i) {
    if ((draw -= weights[i]) < 0) return order[i];
  }
  return order[kept - 1];
}

}  // namespace opgraph::llm

// llm::Sampler: greedy, the repetition penalty, top-k, top-p and the draw's
// distribution, against what transformers' logits processors compute.
#include <gtest/gtest.h>

#include <cmath>

#include "opgraph/llm/sampler.h"
#include "testing.h"

namespace opgraph::llm {
namespace {

using testing::error_of;

TEST(Sampler, GreedyTakesTheLargestLogitAfterThePenalty) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.5f, -4.0f};
  EXPECT_EQ(Sampler({}).next(logits, {}), 1);
  // 3 / 2 = 1.5 falls below 2.5; a negative logit is multiplied, not divided.
  const std::vector<int32_t> seen = {1, 3, 3};
  EXPECT_EQ(Sampler({.repetition_penalty = 2.0}).next(logits, seen), 2);
  EXPECT_EQ(Sampler({.repetition_penalty = 2.0}).next(std::vector<float>{-4.0f, -5.0f}, std::vector<int32_t>{0}), 1);
}

TEST(Sampler, DrawsFollowTheSoftmaxOfWhatTopKAndTopPKeep) {
  // Probabilities 0.75 and 0.25 at temperature 1.
  const std::vector<float> logits = {std::log(3.0f), 0.0f, -30.0f};
  Sampler sampler({.temperature = 1.0, .seed = 3});
  int firsts = 0, draws = 20000;
  for (int i = 0; i < draws; ++i) firsts += sampler.next(logits, {}) == 0;
  EXPECT_NEAR(firsts / static_cast<double>(draws), 0.75, 0.015);
  Sampler top_k({.temperature = 5.0, .top_k = 1, .seed = 3});
  Sampler top_p({.temperature = 1.0, .top_p = 0.7, .seed = 3});
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(top_k.next(logits, {}), 0);
    EXPECT_EQ(top_p.next(logits, {}), 0);  // 0.75 reaches 0.7 alone
  }
}

TEST(Sampler, ASeedRepeatsTheDraws) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  Sampler a({.temperature = 2.0, .seed = 11}), b({.temperature = 2.0, .seed = 11});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.next(logits, {}), b.next(logits, {}));
}

TEST(Sampler, OptionsOutOfRangeAreErrors) {
  EXPECT_NE(error_of([] { Sampler({.temperature = -1}); }).find("temperature: expected 0 (greedy) or more, got -1"),
            std::string::npos);
  EXPECT_NE(error_of([] { Sampler({.top_k = 0}); }).find("top_k: expected 1 or more, got 0"), std::string::npos);
  EXPECT_NE(error_of([] { Sampler({.top_p = 0.0}); }).find("top_p: expected a value in (0, 1], got 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { Sampler({.repetition_penalty = 0.0}); }).find("repetition_penalty: expected a value above 0"),
            std::string::npos);
}

}  // namespace
}  // namespace opgraph::llm

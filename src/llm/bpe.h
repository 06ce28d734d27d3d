// A BPE model: a vocabulary of strings and the merges, in rank order, that
// build its tokens from single characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace opgraph::llm {

// std::unordered_map looked up by string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using Vocabulary = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  // A word that is a token as a whole becomes that token, merges or not
  // (Llama-3).
  bool ignore_merges = false;
  // What a character outside the vocabulary becomes; without one it is
  // dropped, as Hugging Face's BPE drops it.
  std::optional<int32_t> unknown_id;
  // Consecutive unknown characters become one unknown token.
  bool fuse_unknown = false;
};

class BpeModel {
 public:
  // Throws opgraph::Error, its message starting with `source`, for a merge
  // whose parts or result are not in the vocabulary.
  BpeModel(Vocabulary vocabulary, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
           std::string_view source);

  // Appends the tokens of `word` (a pre-tokenized piece) to `ids`.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  std::optional<int32_t> find(std::string_view token) const;

  Vocabulary vocabulary_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
};

}  // namespace opgraph::llm

// The pre-tokenizers of a tokenizer.json that byte-level BPE tokenizers use:
// they cut text into the pieces that BPE then tokenizes one by one.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "llm/split_patterns.h"

namespace opgraph::llm {

// Each piece as the characters of its bytes in the byte-level alphabet,
// after a space before a piece that does not start with one
// (add_prefix_space) and a split by GPT-2's pattern (use_regex).
struct ByteLevelPreTokenizer {
  bool add_prefix_space = false;
  bool use_regex = true;
};

// The pattern's matches, each a piece (Hugging Face's Split with the
// behavior "Isolated").
struct SplitPreTokenizer {
  PieceMatcher matcher = nullptr;
};

// Numbers apart from the rest: each digit a piece of its own, or each run of
// digits.
struct DigitsPreTokenizer {
  bool individual_digits = false;
};

using PreTokenizer = std::variant<ByteLevelPreTokenizer, SplitPreTokenizer, DigitsPreTokenizer>;

// `text` through each pre-tokenizer in turn; no piece is empty.
std::vector<std::string> pre_tokenize(std::string_view text, std::span<const PreTokenizer> pre_tokenizers);

}  // namespace opgraph::llm

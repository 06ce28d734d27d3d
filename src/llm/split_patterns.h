// The regular expressions that byte-level tokenizers split text with, as
// hand-written matchers over code points: std::regex has no \p{L}, and a
// tokenizer.json names only a handful of patterns. A pattern not here is an
// error naming it, never a guess.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opgraph::llm {

// The end of the match that starts at `position`. Each pattern here matches
// at every position of any text (its last alternatives take whitespace and
// anything else), so the matches split a text into consecutive pieces, as
// Oniguruma's leftmost search with the pattern's alternatives in order does.
using PieceMatcher = size_t (*)(std::u32string_view text, size_t position);

// GPT-2's pattern, which the ByteLevel pre-tokenizer splits with.
extern const std::string_view kGpt2Pattern;

// The matcher of a pattern spelled as tokenizer.json spells it, or nullptr.
PieceMatcher find_piece_matcher(std::string_view pattern);

// `text` (UTF-8) split into the matches of `matcher`.
std::vector<std::string> split_into_pieces(std::string_view text, PieceMatcher matcher);

}  // namespace opgraph::llm

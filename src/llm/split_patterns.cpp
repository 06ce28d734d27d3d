// The matchers of GPT-2's pattern and of the Llama-3 / Qwen2 family's.
#include "llm/split_patterns.h"

#include <algorithm>
#include <utility>

#include "llm/unicode.h"

namespace opgraph::llm {

const std::string_view kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

bool is_letter(char32_t c) { return char_class(c) == CharClass::Letter; }
bool is_number(char32_t c) { return char_class(c) == CharClass::Number; }
bool is_whitespace(char32_t c) { return char_class(c) == CharClass::Whitespace; }
bool is_line_break(char32_t c) { return c == '\r' || c == '\n'; }
// [^\s\p{L}\p{N}]
bool is_other(char32_t c) {
  const CharClass cls = char_class(c);
  return cls == CharClass::Other || cls == CharClass::Mark;
}

template <typename Predicate>
size_t run_end(std::u32string_view text, size_t position, Predicate predicate) {
  while (position < text.size() && predicate(text[position])) ++position;
  return position;
}

// 's|'t|'re|'ve|'m|'ll|'d, or (?i:...) of them: the end, or 0 for no match.
size_t contraction_end(std::u32string_view text, size_t position, bool ignore_case) {
  if (text[position] != '\'' || position + 1 == text.size()) return 0;
  // Unicode case folding, as Oniguruma's (?i) has it: long s (U+017F) is s.
  const auto letter = [&](size_t i) -> char32_t {
    const char32_t c = text[i];
    if (!ignore_case) return c;
    if (c == 0x17F) return 's';
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
  };
  const char32_t first = letter(position + 1);
  if (first == 's' || first == 't' || first == 'm' || first == 'd') return position + 2;
  if (position + 2 == text.size()) return 0;
  const char32_t second = letter(position + 2);
  const bool two_letters =
      (first == 'r' && second == 'e') || (first == 'v' && second == 'e') || (first == 'l' && second == 'l');
  return two_letters ? position + 3 : 0;
}

// ` ?X+` for a class X that excludes the space: the end, or 0 for no match.
template <typename Predicate>
size_t optional_space_run_end(std::u32string_view text, size_t position, Predicate predicate) {
  const size_t first = text[position] == ' ' ? position + 1 : position;
  if (first == text.size() || !predicate(text[first])) return 0;
  return run_end(text, first, predicate);
}

// \s+(?!\S)|\s+ at whitespace: a run followed by a non-space gives its last
// space to what follows (" word"), unless the run is that one space.
size_t whitespace_end(std::u32string_view text, size_t position) {
  const size_t end = run_end(text, position, is_whitespace);
  return end == text.size() || end - position == 1 ? end : end - 1;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t gpt2_piece_end(std::u32string_view text, size_t position) {
  if (const size_t end = contraction_end(text, position, false)) return end;
  if (const size_t end = optional_space_run_end(text, position, is_letter)) return end;
  if (const size_t end = optional_space_run_end(text, position, is_number)) return end;
  if (const size_t end = optional_space_run_end(text, position, is_other)) return end;
  return whitespace_end(text, position);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,kMaxDigits}
// | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
template <size_t kMaxDigits>
size_t llama3_piece_end(std::u32string_view text, size_t position) {
  if (const size_t end = contraction_end(text, position, true)) return end;
  const char32_t c = text[position];
  if (is_letter(c)) return run_end(text, position, is_letter);
  if (!is_line_break(c) && !is_number(c) && position + 1 < text.size() && is_letter(text[position + 1])) {
    return run_end(text, position + 1, is_letter);
  }
  if (is_number(c)) return std::min(run_end(text, position, is_number), position + kMaxDigits);
  if (const size_t end = optional_space_run_end(text, position, is_other)) return run_end(text, end, is_line_break);
  // Whitespace from here on. \s*[\r\n]+ ends at the run's last line break.
  const size_t run = run_end(text, position, is_whitespace);
  for (size_t end = run; end > position; --end) {
    if (is_line_break(text[end - 1])) return end;
  }
  return whitespace_end(text, position);
}

const std::pair<std::string_view, PieceMatcher> kPatterns[] = {
    {kGpt2Pattern, gpt2_piece_end},
    // Llama-3
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     llama3_piece_end<3>},
    // Qwen2: single digits
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     llama3_piece_end<1>},
};

}  // namespace

PieceMatcher find_piece_matcher(std::string_view pattern) {
  for (const auto& [spelling, matcher] : kPatterns) {
    if (spelling == pattern) return matcher;
  }
  return nullptr;
}

std::vector<std::string> split_into_pieces(std::string_view text, PieceMatcher matcher) {
  std::u32string code_points;
  std::vector<size_t> offsets;  // of each code point in `text`, and of its end
  for (size_t position = 0; position < text.size();) {
    const Utf8Step step = read_utf8(text, position);
    code_points += step.code_point;
    offsets.push_back(position);
    position += step.length;
  }
  offsets.push_back(text.size());
  std::vector<std::string> pieces;
  for (size_t position = 0; position < code_points.size();) {
    const size_t end = matcher(code_points, position);
    pieces.emplace_back(text.substr(offsets[position], offsets[end] - offsets[position]));
    position = end;
  }
  return pieces;
}

}  // namespace opgraph::llm

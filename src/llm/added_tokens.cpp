// Finding added tokens, with the single_word, lstrip and rstrip rules of
// Hugging Face's AddedVocabulary.
#include "llm/added_tokens.h"

#include <algorithm>

#include "llm/unicode.h"

namespace opgraph::llm {
namespace {

// \w as the regex crate has it, near enough: letters, digits, marks and '_'.
bool is_word_character(char32_t c) {
  const CharClass cls = char_class(c);
  return c == '_' || cls == CharClass::Letter || cls == CharClass::Number || cls == CharClass::Mark;
}

bool starts_with_word(std::string_view text) {
  return !text.empty() && is_word_character(read_utf8(text, 0).code_point);
}

size_t last_character_start(std::string_view text) {
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return start;
}

bool ends_with_word(std::string_view text) {
  return !text.empty() && is_word_character(read_utf8(text, last_character_start(text)).code_point);
}

// Where the whitespace at the end of `text` starts.
size_t trailing_whitespace_start(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    const size_t start = last_character_start(text.substr(0, end));
    if (char_class(read_utf8(text, start).code_point) != CharClass::Whitespace) break;
    end = start;
  }
  return end;
}

size_t leading_whitespace_length(std::string_view text) {
  size_t position = 0;
  while (position < text.size()) {
    const Utf8Step step = read_utf8(text, position);
    if (char_class(step.code_point) != CharClass::Whitespace) break;
    position += step.length;
  }
  return position;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<const AddedToken*>& tokens) {
  for (const AddedToken* token : tokens) {
    if (!token->content.empty()) tokens_by_first_byte_[static_cast<uint8_t>(token->content[0])].push_back(token);
  }
  for (auto& bucket : tokens_by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
  }
}

const AddedToken* AddedTokenMatcher::longest_match(std::string_view text, size_t position) const {
  for (const AddedToken* token : tokens_by_first_byte_[static_cast<uint8_t>(text[position])]) {
    if (text.substr(position).starts_with(token->content)) return token;
  }
  return nullptr;
}

std::vector<TextPiece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextPiece> pieces;
  size_t piece_start = 0;  // of the text not yet in a piece
  for (size_t position = 0; position < text.size();) {
    const AddedToken* token = longest_match(text, position);
    if (token == nullptr) {
      ++position;
      continue;
    }
    size_t start = position;
    size_t stop = position + token->content.size();
    position = stop;
    if (token->single_word && (ends_with_word(text.substr(0, start)) || starts_with_word(text.substr(stop)))) {
      continue;
    }
    if (token->lstrip) start = std::max(trailing_whitespace_start(text.substr(0, start)), piece_start);
    if (token->rstrip) stop += leading_whitespace_length(text.substr(stop));
    if (piece_start < start) pieces.push_back({std::string(text.substr(piece_start, start - piece_start)), {}});
    pieces.push_back({std::string(text.substr(start, stop - start)), token->id});
    piece_start = position = stop;
  }
  if (piece_start < text.size()) pieces.push_back({std::string(text.substr(piece_start)), {}});
  return pieces;
}

}  // namespace opgraph::llm

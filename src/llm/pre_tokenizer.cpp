// The pre-tokenizers, each applied to every piece the previous ones made.
#include "llm/pre_tokenizer.h"

#include "llm/byte_level.h"
#include "llm/unicode.h"

namespace opgraph::llm {
namespace {

void append_non_empty(std::vector<std::string>& pieces, std::string piece) {
  if (!piece.empty()) pieces.push_back(std::move(piece));
}

void apply(const ByteLevelPreTokenizer& pre_tokenizer, std::string piece, std::vector<std::string>& out) {
  if (pre_tokenizer.add_prefix_space && !piece.starts_with(' ')) piece.insert(0, 1, ' ');
  if (!pre_tokenizer.use_regex) {
    append_non_empty(out, bytes_to_byte_level(piece));
    return;
  }
  static const PieceMatcher gpt2 = find_piece_matcher(kGpt2Pattern);
  for (const std::string& part : split_into_pieces(piece, gpt2)) append_non_empty(out, bytes_to_byte_level(part));
}

void apply(const SplitPreTokenizer& pre_tokenizer, const std::string& piece, std::vector<std::string>& out) {
  for (std::string& part : split_into_pieces(piece, pre_tokenizer.matcher)) append_non_empty(out, std::move(part));
}

void apply(const DigitsPreTokenizer& pre_tokenizer, const std::string& piece, std::vector<std::string>& out) {
  size_t start = 0;
  bool in_number = false;
  for (size_t position = 0; position < piece.size();) {
    const Utf8Step step = read_utf8(piece, position);
    const bool is_digit = char_class(step.code_point) == CharClass::Number;
    if (position > start && (is_digit != in_number || (is_digit && pre_tokenizer.individual_digits))) {
      out.push_back(piece.substr(start, position - start));
      start = position;
    }
    in_number = is_digit;
    position += step.length;
  }
  append_non_empty(out, piece.substr(start));
}

}  // namespace

std::vector<std::string> pre_tokenize(std::string_view text, std::span<const PreTokenizer> pre_tokenizers) {
  std::vector<std::string> pieces;
  append_non_empty(pieces, std::string(text));
  for (const PreTokenizer& pre_tokenizer : pre_tokenizers) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      std::visit([&](const auto& step) { apply(step, std::move(piece), next); }, pre_tokenizer);
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace opgraph::llm

// Added tokens (special ones such as "<|endoftext|>", and tokens added to a
// vocabulary after training): found in the text before anything else, and
// kept whole.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opgraph::llm {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;  // matches only where no word character is on either side
  bool lstrip = false;       // takes in the whitespace before it
  bool rstrip = false;       // and after it
  bool normalized = false;   // matches the normalized text rather than the raw text
};

// A stretch of text, and the added token it is, if it is one.
struct TextPiece {
  std::string text;
  std::optional<int32_t> token_id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // The tokens must outlive the matcher.
  explicit AddedTokenMatcher(const std::vector<const AddedToken*>& tokens);

  // `text` cut at each match: at the leftmost place a token starts, the
  // longest token that starts there.
  std::vector<TextPiece> split(std::string_view text) const;

 private:
  const AddedToken* longest_match(std::string_view text, size_t position) const;

  // By first byte, longest first.
  std::array<std::vector<const AddedToken*>, 256> tokens_by_first_byte_;
};

}  // namespace opgraph::llm

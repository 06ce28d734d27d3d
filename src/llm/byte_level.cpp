// The byte-level alphabet both ways.
#include "llm/byte_level.h"

#include <array>
#include <unordered_map>

#include "llm/unicode.h"

namespace opgraph::llm {
namespace {

bool stands_for_itself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Alphabet {
  std::array<std::string, 256> utf8_of_byte;
  std::unordered_map<char32_t, char> byte_of_char;

  Alphabet() {
    char32_t next_unprintable = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const char32_t code_point = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next_unprintable++;
      append_utf8(utf8_of_byte[byte], code_point);
      byte_of_char.emplace(code_point, static_cast<char>(byte));
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet kAlphabet;
  return kAlphabet;
}

}  // namespace

std::string bytes_to_byte_level(std::string_view bytes) {
  const Alphabet& table = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char byte : bytes) out += table.utf8_of_byte[static_cast<uint8_t>(byte)];
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  const Alphabet& table = alphabet();
  std::string bytes;
  for (size_t position = 0; position < token.size();) {
    const Utf8Step step = read_utf8(token, position);
    if (step.kind != Utf8Step::Character) return std::nullopt;
    const auto it = table.byte_of_char.find(step.code_point);
    if (it == table.byte_of_char.end()) return std::nullopt;
    bytes += it->second;
    position += step.length;
  }
  return bytes;
}

}  // namespace opgraph::llm

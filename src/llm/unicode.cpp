// UTF-8 reading and writing, and the character class of a code point.
#include "llm/unicode.h"

#include <algorithm>

namespace opgraph::llm {

CharClass char_class(char32_t code_point) {
  const std::span<const CharClassRange> ranges = char_class_ranges();
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), code_point,
                                   [](char32_t value, const CharClassRange& range) { return value < range.first; });
  if (it == ranges.begin()) return CharClass::Other;
  const CharClassRange& range = *(it - 1);
  return code_point <= range.last ? range.char_class : CharClass::Other;
}

Utf8Step read_utf8(std::string_view bytes, size_t position) {
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  const uint8_t lead = byte_at(position);
  if (lead < 0x80) return {Utf8Step::Character, 1, lead};
  // The second byte's range excludes overlong forms, surrogates and code
  // points past U+10FFFF (Unicode's table 3-7).
  size_t length = 0;
  char32_t code_point = 0;
  uint8_t low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {Utf8Step::Invalid, 1, 0};
  }
  for (size_t i = 1; i < length; ++i) {
    if (position + i == bytes.size()) return {Utf8Step::Truncated, i, 0};
    const uint8_t next = byte_at(position + i);
    if (next < low || next > high) return {Utf8Step::Invalid, i, 0};
    low = 0x80;
    high = 0xBF;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  return {Utf8Step::Character, length, code_point};
}

void append_utf8(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

std::string lossy_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t position = 0; position < bytes.size();) {
    const Utf8Step step = read_utf8(bytes, position);
    if (step.kind == Utf8Step::Character) {
      out.append(bytes.substr(position, step.length));
    } else {
      append_utf8(out, 0xFFFD);
    }
    position += step.length;
  }
  return out;
}

size_t complete_utf8_prefix(std::string_view bytes) {
  size_t position = 0;
  while (position < bytes.size()) {
    const Utf8Step step = read_utf8(bytes, position);
    if (step.kind == Utf8Step::Truncated) break;
    position += step.length;
  }
  return position;
}

}  // namespace opgraph::llm

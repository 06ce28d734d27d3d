// Unicode normalization form C, which Qwen2's tokenizer applies to text
// before splitting it: canonical decomposition, canonical ordering of
// combining marks, then canonical composition (UAX #15), from the tables
// scripts/gen_unicode_tables.py generates.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace opgraph::llm {

struct CombiningClassRange {
  char32_t first;
  char32_t last;
  uint8_t combining_class;
};

// A code point's full canonical decomposition: `length` code points from
// `offset` in decomposed_code_points().
struct Decomposition {
  char32_t code_point;
  uint16_t offset;
  uint8_t length;
};

struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};

// Sorted by code point (unicode_tables.cpp); Hangul syllables are computed.
std::span<const CombiningClassRange> combining_class_ranges();
std::span<const Decomposition> canonical_decompositions();
std::span<const char32_t> decomposed_code_points();
// Sorted by (first, second): the primary composites.
std::span<const Composition> canonical_compositions();

// `text` (valid UTF-8) in normalization form C.
std::string nfc(std::string_view text);

}  // namespace opgraph::llm

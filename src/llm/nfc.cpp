// Normalization form C over the generated tables, with Hangul syllables
// decomposed and composed arithmetically (Unicode's section 3.12).
#include "llm/nfc.h"

#include <algorithm>
#include <optional>

#include "llm/unicode.h"

namespace opgraph::llm {
namespace {

constexpr char32_t kSyllableBase = 0xAC00, kLeadBase = 0x1100, kVowelBase = 0x1161, kTrailBase = 0x11A7;
constexpr char32_t kLeadCount = 19, kVowelCount = 21, kTrailCount = 28;
constexpr char32_t kSyllableCount = kLeadCount * kVowelCount * kTrailCount;

uint8_t combining_class(char32_t code_point) {
  const std::span<const CombiningClassRange> ranges = combining_class_ranges();
  const auto it =
      std::upper_bound(ranges.begin(), ranges.end(), code_point,
                       [](char32_t value, const CombiningClassRange& range) { return value < range.first; });
  if (it == ranges.begin() || code_point > (it - 1)->last) return 0;
  return (it - 1)->combining_class;
}

void decompose(char32_t code_point, std::u32string& out) {
  if (code_point >= kSyllableBase && code_point < kSyllableBase + kSyllableCount) {
    const char32_t index = code_point - kSyllableBase;
    out += kLeadBase + index / (kVowelCount * kTrailCount);
    out += kVowelBase + index % (kVowelCount * kTrailCount) / kTrailCount;
    if (index % kTrailCount != 0) out += kTrailBase + index % kTrailCount;
    return;
  }
  const std::span<const Decomposition> table = canonical_decompositions();
  const auto it = std::lower_bound(table.begin(), table.end(), code_point,
                                   [](const Decomposition& entry, char32_t value) { return entry.code_point < value; });
  if (it == table.end() || it->code_point != code_point) {
    out += code_point;
    return;
  }
  const std::span<const char32_t> decomposed = decomposed_code_points().subspan(it->offset, it->length);
  out.append(decomposed.begin(), decomposed.end());
}

std::optional<char32_t> compose(char32_t first, char32_t second) {
  if (first >= kLeadBase && first < kLeadBase + kLeadCount && second >= kVowelBase &&
      second < kVowelBase + kVowelCount) {
    return kSyllableBase + ((first - kLeadBase) * kVowelCount + (second - kVowelBase)) * kTrailCount;
  }
  if (first >= kSyllableBase && first < kSyllableBase + kSyllableCount && (first - kSyllableBase) % kTrailCount == 0 &&
      second > kTrailBase && second < kTrailBase + kTrailCount) {
    return first + (second - kTrailBase);
  }
  const std::span<const Composition> table = canonical_compositions();
  const auto it = std::lower_bound(table.begin(), table.end(), std::pair(first, second),
                                   [](const Composition& entry, const std::pair<char32_t, char32_t>& pair) {
                                     return std::pair(entry.first, entry.second) < pair;
                                   });
  if (it == table.end() || it->first != first || it->second != second) return std::nullopt;
  return it->composite;
}

}  // namespace

std::string nfc(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char byte) { return static_cast<uint8_t>(byte) < 0x80; })) {
    return std::string(text);
  }
  std::u32string decomposed;
  for (size_t position = 0; position < text.size();) {
    const Utf8Step step = read_utf8(text, position);
    decompose(step.code_point, decomposed);
    position += step.length;
  }
  // Canonical ordering: each run of combining marks sorted by class, stably.
  for (size_t start = 0; start < decomposed.size();) {
    size_t end = start;
    while (end < decomposed.size() && combining_class(decomposed[end]) != 0) ++end;
    std::stable_sort(decomposed.begin() + start, decomposed.begin() + end,
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    start = end + 1;
  }
  // Composition: a character joins the last starter unless something between
  // them blocks it (a starter, or a mark of its class or higher).
  std::u32string composed;
  std::optional<size_t> starter;
  uint8_t last_class = 0;
  for (char32_t code_point : decomposed) {
    const uint8_t cls = combining_class(code_point);
    if (starter && (*starter + 1 == composed.size() || (last_class != 0 && last_class < cls))) {
      if (const std::optional<char32_t> composite = compose(composed[*starter], code_point)) {
        composed[*starter] = *composite;
        continue;
      }
    }
    if (cls == 0) starter = composed.size();
    last_class = cls;
    composed += code_point;
  }
  std::string out;
  out.reserve(text.size());
  for (char32_t code_point : composed) append_utf8(out, code_point);
  return out;
}

}  // namespace opgraph::llm

// GPT-2's byte-level alphabet: each of the 256 byte values stands for a
// printable character, so that a BPE vocabulary of strings covers any bytes.
// Printable Latin-1 characters stand for their own byte; the others for
// U+0100 onwards, in byte order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace opgraph::llm {

// The UTF-8 of the characters that stand for `bytes`, one per byte.
std::string bytes_to_byte_level(std::string_view bytes);

// The bytes a token's characters stand for; nullopt when one of them is not
// in the alphabet (an added token such as "<|endoftext|>" is all in it).
std::optional<std::string> byte_level_to_bytes(std::string_view token);

}  // namespace opgraph::llm

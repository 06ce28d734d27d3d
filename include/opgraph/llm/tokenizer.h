// Text to token ids and back, as a Hugging Face tokenizer.json says: the
// byte-level BPE tokenizers of GPT-2, Llama-3, Qwen2 and SmolLM, with no
// Python at run time. Whatever a file asks for that is not implemented is an
// opgraph::Error naming the file and the setting, never a silent difference
// from Hugging Face's tokenizers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opgraph::llm {

class Tokenizer {
 public:
  // Reads a tokenizer.json, and the bos_token and eos_token of the
  // tokenizer_config.json beside it where there is one.
  static Tokenizer from_file(const std::string& path);
  // The same from the text of a tokenizer.json (and of a
  // tokenizer_config.json, or empty); `source` names it in messages.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                             std::string_view source = "tokenizer.json");

  // The ids of `text` (UTF-8), with the post-processor's special tokens
  // (a BOS, say) if `add_special_tokens`.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;

  // The text of `ids`; bytes that are not UTF-8 become U+FFFD. An id no
  // token has is an opgraph::Error, where Hugging Face's decode skips it.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // The bytes a token stands for: a part of a UTF-8 character, possibly.
  std::string token_bytes(int32_t id) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token as the vocabulary spells it (in the byte-level alphabet).
  std::string id_to_token(int32_t id) const;
  // Whether the id is a special added token, which decoding may skip.
  bool is_special(int32_t id) const;
  // One past the largest id.
  int32_t vocab_size() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Decodes ids one at a time as a model makes them: each push returns the text
// that became complete, holding back the bytes of a UTF-8 character that the
// next tokens may complete. The pushes' texts and finish() together are
// decode() of all the ids.
class TokenStreamDecoder {
 public:
  explicit TokenStreamDecoder(Tokenizer tokenizer, bool skip_special_tokens = false)
      : tokenizer_(std::move(tokenizer)), skip_special_tokens_(skip_special_tokens) {}

  std::string push(int32_t id);
  // What is held back, each incomplete character as U+FFFD; starts afresh.
  std::string finish();

 private:
  Tokenizer tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;
};

}  // namespace opgraph::llm

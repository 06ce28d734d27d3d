// Encoding as Hugging Face's tokenizers does for byte-level BPE: added tokens
// out of the text first, the rest normalized and pre-tokenized into pieces,
// each piece tokenized by BPE, then the post-processor's special tokens
// around them. Decoding concatenates the tokens' bytes.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "llm/byte_level.h"
#include "llm/nfc.h"
#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "opgraph/core/error.h"

namespace opgraph::llm {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  OPGRAPH_CHECK(in, "Tokenizer: cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::string& path) {
  const std::filesystem::path config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  const std::string config = std::filesystem::exists(config_path) ? read_file(config_path) : std::string();
  return Tokenizer(load_tokenizer(read_file(path), config, path));
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json, std::string_view source) {
  return Tokenizer(load_tokenizer(tokenizer_json, config_json, source));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  for (size_t position = 0; position < text.size();) {
    const Utf8Step step = read_utf8(text, position);
    OPGRAPH_CHECK(step.kind == Utf8Step::Character, "Tokenizer.encode: the text is not UTF-8 (at byte ", position, ")");
    position += step.length;
  }
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = impl_->ids_before;
  for (const TextPiece& piece : impl_->raw_matcher.split(text)) {
    if (piece.token_id) {
      ids.push_back(*piece.token_id);
      continue;
    }
    for (const TextPiece& part : impl_->normalized_matcher.split(impl_->nfc ? nfc(piece.text) : piece.text)) {
      if (part.token_id) {
        ids.push_back(*part.token_id);
        continue;
      }
      for (const std::string& word : pre_tokenize(part.text, impl_->pre_tokenizers)) {
        impl_->model->tokenize(word, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->ids_after.begin(), impl_->ids_after.end());
  return ids;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  const bool known = id >= 0 && id < vocab_size() && impl_->token_of_id[id] != nullptr;
  OPGRAPH_CHECK(known, impl_->source, ": no token has id ", id, " (ids run from 0 to ", vocab_size() - 1, ")");
  return *impl_->token_of_id[id];
}

std::string Tokenizer::token_bytes(int32_t id) const {
  // A token whose characters are not all in the byte-level alphabet (an added
  // token with a space, say) stands for its own UTF-8, as in Hugging Face's
  // ByteLevel decoder.
  std::string token = id_to_token(id);
  std::optional<std::string> bytes = byte_level_to_bytes(token);
  return bytes ? *std::move(bytes) : token;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (!(skip_special_tokens && is_special(id))) bytes += token_bytes(id);
  }
  return lossy_utf8(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->token_to_id(token); }

bool Tokenizer::is_special(int32_t id) const { return id >= 0 && id < vocab_size() && impl_->special_of_id[id]; }

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->token_of_id.size()); }

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos_id; }

std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos_id; }

std::string TokenStreamDecoder::push(int32_t id) {
  if (skip_special_tokens_ && tokenizer_.is_special(id)) return {};
  pending_ += tokenizer_.token_bytes(id);
  const size_t complete = complete_utf8_prefix(pending_);
  std::string text = lossy_utf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return text;
}

std::string TokenStreamDecoder::finish() {
  std::string text = lossy_utf8(pending_);
  pending_.clear();
  return text;
}

}  // namespace opgraph::llm

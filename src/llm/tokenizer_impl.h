// What a Tokenizer holds, as tokenizer_json.cpp reads it from a
// tokenizer.json and tokenizer.cpp uses it.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/added_tokens.h"
#include "llm/bpe.h"
#include "llm/pre_tokenizer.h"
#include "opgraph/llm/tokenizer.h"

namespace opgraph::llm {

struct Tokenizer::Impl {
  std::string source;  // the file, for messages
  std::optional<BpeModel> model;
  // Unicode normalization form C before everything but the added tokens
  // that match the raw text (Qwen2's normalizer); else no normalizer.
  bool nfc = false;
  // Deques, so that the matchers' pointers to their elements stay valid.
  std::deque<AddedToken> added_tokens;
  // The tokens with normalized=true, normalized as the text is.
  std::deque<AddedToken> normalized_tokens;
  // Tokens with normalized=false match the raw text first, then those with
  // normalized=true the rest once normalized.
  AddedTokenMatcher raw_matcher;
  AddedTokenMatcher normalized_matcher;
  // Each added token's id by its content as the file spells it.
  Vocabulary added_token_ids;
  std::vector<PreTokenizer> pre_tokenizers;
  // The post-processor's special tokens around the text's.
  std::vector<int32_t> ids_before;
  std::vector<int32_t> ids_after;
  // Each id's token (an added token's if it is one), or nullptr for an id
  // no token has; and whether it is special.
  std::vector<const std::string*> token_of_id;
  std::vector<bool> special_of_id;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;

  std::optional<int32_t> token_to_id(std::string_view token) const;
};

// Reads a tokenizer.json (and a tokenizer_config.json, or empty); throws
// opgraph::Error starting with `source` for what it cannot read or support.
std::shared_ptr<const Tokenizer::Impl> load_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                                      std::string_view source);

}  // namespace opgraph::llm

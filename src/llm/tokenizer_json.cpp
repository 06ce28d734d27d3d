// Reading a tokenizer.json into a Tokenizer::Impl: each part of the pipeline
// (normalizer, pre-tokenizer, model, added tokens, post-processor, decoder)
// as far as the byte-level BPE tokenizers of GPT-2, Llama-3, Qwen2 and
// SmolLM use it, and an error naming anything
// else.
#include <nlohmann/json.hpp>

#include "llm/nfc.h"
#include "llm/tokenizer_impl.h"
#include "opgraph/core/error.h"

namespace opgraph::llm {
namespace {

using nlohmann::json;

class JsonReader {
 public:
  explicit JsonReader(std::string_view source) : source_(source) {}

  const json& field(const json& object, std::string_view name, std::string_view where) const {
    OPGRAPH_CHECK(object.is_object() && object.contains(name), source_, ": ", where, " has no field '", name, "'");
    return object[std::string(name)];
  }
  std::string string_field(const json& object, std::string_view name, std::string_view where) const {
    const json& value = field(object, name, where);
    OPGRAPH_CHECK(value.is_string(), source_, ": ", where, ".", name, " must be a string, got ", value.type_name());
    return value.get<std::string>();
  }
  // A flag that the file may leave out.
  bool flag(const json& object, std::string_view name, bool default_value, std::string_view where) const {
    if (!object.contains(name) || object[std::string(name)].is_null()) return default_value;
    const json& value = object[std::string(name)];
    OPGRAPH_CHECK(value.is_boolean(), source_, ": ", where, ".", name, " must be true or false, got ", value.dump());
    return value.get<bool>();
  }
  std::string type_of(const json& object, std::string_view where) const { return string_field(object, "type", where); }
  [[noreturn]] void unsupported(std::string_view where, std::string_view what) const {
    throw Error(detail::concat(source_, ": ", where, ": ", what, " is not supported"));
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

void read_pre_tokenizer(const JsonReader& reader, const json& config, std::vector<PreTokenizer>& out) {
  const std::string where = "pre_tokenizer";
  const std::string type = reader.type_of(config, where);
  if (type == "Sequence") {
    for (const json& step : reader.field(config, "pretokenizers", where)) read_pre_tokenizer(reader, step, out);
  } else if (type == "ByteLevel") {
    out.push_back(ByteLevelPreTokenizer{.add_prefix_space = reader.flag(config, "add_prefix_space", false, where),
                                        .use_regex = reader.flag(config, "use_regex", true, where)});
  } else if (type == "Digits") {
    out.push_back(DigitsPreTokenizer{.individual_digits = reader.flag(config, "individual_digits", false, where)});
  } else if (type == "Split") {
    const std::string behavior = reader.string_field(config, "behavior", "Split");
    if (behavior != "Isolated") reader.unsupported("Split", "behavior '" + behavior + "'");
    if (reader.flag(config, "invert", false, "Split")) reader.unsupported("Split", "invert");
    const json& pattern = reader.field(config, "pattern", "Split");
    if (!pattern.contains("Regex")) reader.unsupported("Split", "pattern " + pattern.dump());
    const std::string regex = reader.string_field(pattern, "Regex", "Split.pattern");
    const PieceMatcher matcher = find_piece_matcher(regex);
    OPGRAPH_CHECK(matcher != nullptr, reader.source(), ": Split: pattern '", regex,
                  "' is none of those the tokenizer implements (GPT-2's, Llama-3's, Qwen2's)");
    out.push_back(SplitPreTokenizer{.matcher = matcher});
  } else {
    reader.unsupported(where, "type '" + type + "'");
  }
}

BpeModel read_model(const JsonReader& reader, const json& model) {
  const std::string type = reader.type_of(model, "model");
  if (type != "BPE") reader.unsupported("model", "type '" + type + "' (only BPE is)");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json value = model.value(affix, json());
    if (!value.is_null() && value != "") reader.unsupported("model", std::string(affix) + " " + value.dump());
  }
  if (!model.value("dropout", json()).is_null()) reader.unsupported("model", "dropout");
  if (reader.flag(model, "byte_fallback", false, "model")) reader.unsupported("model", "byte_fallback");

  Vocabulary vocabulary;
  for (const auto& [token, id] : reader.field(model, "vocab", "model").items()) {
    OPGRAPH_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX, reader.source(),
                  ": model.vocab: the id of '", token, "' must be an integer from 0, got ", id.dump());
    vocabulary.emplace(token, id.get<int32_t>());
  }
  // Merges are "left right" strings in older files, [left, right] pairs in newer ones.
  std::vector<std::pair<std::string, std::string>> merges;
  for (const json& merge : reader.field(model, "merges", "model")) {
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      OPGRAPH_CHECK(space != std::string::npos && text.find(' ', space + 1) == std::string::npos, reader.source(),
                    ": model.merges: '", text, "' is not two tokens separated by a space");
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else {
      OPGRAPH_CHECK(merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string(),
                    reader.source(), ": model.merges: ", merge.dump(), " is not a pair of tokens");
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    }
  }
  BpeOptions options;
  options.ignore_merges = reader.flag(model, "ignore_merges", false, "model");
  options.fuse_unknown = reader.flag(model, "fuse_unk", false, "model");
  if (const json unknown = model.value("unk_token", json()); !unknown.is_null()) {
    const auto it = vocabulary.find(unknown.get<std::string>());
    OPGRAPH_CHECK(it != vocabulary.end(), reader.source(), ": model.unk_token ", unknown.dump(),
                  " is not in the vocabulary");
    options.unknown_id = it->second;
  }
  return BpeModel(std::move(vocabulary), merges, options, reader.source());
}

AddedToken read_added_token(const JsonReader& reader, const json& entry) {
  const std::string where = "added_tokens";
  const json& id = reader.field(entry, "id", where);
  OPGRAPH_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX, reader.source(),
                ": added_tokens: id ", id.dump(), " is not an integer from 0");
  return AddedToken{.content = reader.string_field(entry, "content", where),
                    .id = id.get<int32_t>(),
                    .special = reader.flag(entry, "special", false, where),
                    .single_word = reader.flag(entry, "single_word", false, where),
                    .lstrip = reader.flag(entry, "lstrip", false, where),
                    .rstrip = reader.flag(entry, "rstrip", false, where),
                    .normalized = reader.flag(entry, "normalized", false, where)};
}

// The special tokens a TemplateProcessing puts around a single sequence.
void read_template(const JsonReader& reader, const json& config, Tokenizer::Impl& impl) {
  const std::string where = "TemplateProcessing";
  const json& special_tokens = reader.field(config, "special_tokens", where);
  bool seen_sequence = false;
  for (const json& item : reader.field(config, "single", where)) {
    if (item.contains("Sequence")) {
      const std::string sequence = reader.string_field(item["Sequence"], "id", where + ".single");
      if (sequence != "A" || seen_sequence) reader.unsupported(where, "a single template with sequence " + sequence);
      seen_sequence = true;
      continue;
    }
    const std::string name = reader.string_field(reader.field(item, "SpecialToken", where + ".single"), "id", where);
    const json& token = reader.field(special_tokens, name, where + ".special_tokens");
    std::vector<int32_t>& ids = seen_sequence ? impl.ids_after : impl.ids_before;
    for (const json& id : reader.field(token, "ids", where + ".special_tokens." + name))
      ids.push_back(id.get<int32_t>());
  }
}

void read_post_processor(const JsonReader& reader, const json& config, Tokenizer::Impl& impl) {
  const std::string type = reader.type_of(config, "post_processor");
  if (type == "Sequence") {
    for (const json& step : reader.field(config, "processors", "post_processor")) {
      read_post_processor(reader, step, impl);
    }
  } else if (type == "TemplateProcessing") {
    read_template(reader, config, impl);
  } else if (type != "ByteLevel") {  // which changes only offsets
    reader.unsupported("post_processor", "type '" + type + "'");
  }
}

// bos_token / eos_token of a tokenizer_config.json: a string, an added
// token's {"content": ...}, or null.
std::optional<int32_t> read_config_token(const JsonReader& reader, const json& config, const char* name,
                                         const Tokenizer::Impl& impl) {
  if (!config.contains(name) || config[name].is_null()) return std::nullopt;
  const json& value = config[name];
  const std::string token =
      value.is_string() ? value.get<std::string>() : reader.string_field(value, "content", "tokenizer_config.json");
  const std::optional<int32_t> id = impl.token_to_id(token);
  OPGRAPH_CHECK(id.has_value(), reader.source(), ": tokenizer_config.json: ", name, " '", token,
                "' is not in the vocabulary");
  return id;
}

void index_tokens(Tokenizer::Impl& impl) {
  const auto place = [&](int32_t id, const std::string& token, bool special) {
    if (static_cast<size_t>(id) >= impl.token_of_id.size()) {
      impl.token_of_id.resize(id + 1, nullptr);
      impl.special_of_id.resize(id + 1, false);
    }
    impl.token_of_id[id] = &token;
    impl.special_of_id[id] = special;
  };
  for (const auto& [token, id] : impl.model->vocabulary()) place(id, token, false);
  // An added token's entry wins, normalized if it matches normalized text,
  // as in Hugging Face's id_to_token.
  for (const AddedToken& token : impl.added_tokens) {
    if (!token.normalized) place(token.id, token.content, token.special);
  }
  for (const AddedToken& token : impl.normalized_tokens) place(token.id, token.content, token.special);
}

json parse(const JsonReader& reader, std::string_view text, std::string_view what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(detail::concat(reader.source(), ": ", what, " is not valid JSON: ", e.what()));
  }
}

}  // namespace

std::optional<int32_t> Tokenizer::Impl::token_to_id(std::string_view token) const {
  for (const Vocabulary* vocabulary : {&added_token_ids, &model->vocabulary()}) {
    if (const auto it = vocabulary->find(token); it != vocabulary->end()) return it->second;
  }
  return std::nullopt;
}

std::shared_ptr<const Tokenizer::Impl> load_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                                      std::string_view source) {
  const JsonReader reader(source);
  const json root = parse(reader, tokenizer_json, "the file");
  auto impl = std::make_shared<Tokenizer::Impl>();
  impl->source = source;
  try {
    if (const json normalizer = root.value("normalizer", json()); !normalizer.is_null()) {
      const std::string type = reader.type_of(normalizer, "normalizer");
      if (type != "NFC") reader.unsupported("normalizer", "type '" + type + "' (NFC is)");
      impl->nfc = true;
    }
    if (const json pre_tokenizer = root.value("pre_tokenizer", json()); !pre_tokenizer.is_null()) {
      read_pre_tokenizer(reader, pre_tokenizer, impl->pre_tokenizers);
    }
    impl->model.emplace(read_model(reader, reader.field(root, "model", "the file")));

    std::vector<const AddedToken*> raw, normalized;
    for (const json& entry : root.value("added_tokens", json::array())) {
      const AddedToken& token = impl->added_tokens.emplace_back(read_added_token(reader, entry));
      impl->added_token_ids.insert_or_assign(token.content, token.id);
      if (!token.normalized) {
        raw.push_back(&token);
        continue;
      }
      AddedToken& normalized_token = impl->normalized_tokens.emplace_back(token);
      if (impl->nfc) normalized_token.content = nfc(token.content);
      normalized.push_back(&normalized_token);
    }
    impl->raw_matcher = AddedTokenMatcher(raw);
    impl->normalized_matcher = AddedTokenMatcher(normalized);

    if (const json post_processor = root.value("post_processor", json()); !post_processor.is_null()) {
      read_post_processor(reader, post_processor, *impl);
    }
    const json decoder = root.value("decoder", json());
    OPGRAPH_CHECK(!decoder.is_null(), source, ": a tokenizer without a decoder is not supported (ByteLevel is)");
    const std::string decoder_type = reader.type_of(decoder, "decoder");
    if (decoder_type != "ByteLevel") reader.unsupported("decoder", "type '" + decoder_type + "' (ByteLevel is)");

    index_tokens(*impl);
    if (!config_json.empty()) {
      const json config = parse(reader, config_json, "tokenizer_config.json");
      impl->bos_id = read_config_token(reader, config, "bos_token", *impl);
      impl->eos_id = read_config_token(reader, config, "eos_token", *impl);
    }
  } catch (const json::exception& e) {
    throw Error(detail::concat(source, ": ", e.what()));
  }
  return impl;
}

}  // namespace opgraph::llm

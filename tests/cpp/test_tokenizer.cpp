// The tokenizer's parts on cases worked out by hand: the split patterns, BPE
// merge order, normalization form C, UTF-8 held back or replaced, and the
// errors of a bad tokenizer.json. tests/python/test_tokenizer.py compares whole tokenizers
// with Hugging Face's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llm/byte_level.h"
#include "llm/nfc.h"
#include "llm/pre_tokenizer.h"
#include "llm/split_patterns.h"
#include "llm/unicode.h"
#include "opgraph/llm/tokenizer.h"
#include "testing.h"

namespace opgraph::llm {
namespace {

using nlohmann::json;
using testing::error_of;
using Pieces = std::vector<std::string>;

constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The 256 bytes as ids 0-255, then each merge's result, and <|end|> as a
// special added token.
json byte_level_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges) {
  json vocab = json::object();
  for (int byte = 0; byte < 256; ++byte) vocab[bytes_to_byte_level(std::string(1, static_cast<char>(byte)))] = byte;
  json merge_list = json::array();
  for (const auto& [left, right] : merges) {
    if (!vocab.contains(left + right)) vocab[left + right] = vocab.size();
    merge_list.push_back({left, right});
  }
  const int end_id = static_cast<int>(vocab.size());
  return {{"added_tokens", {{{"id", end_id}, {"content", "<|end|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}}};
}

Tokenizer tokenizer_of(const json& config) { return Tokenizer::from_json(config.dump()); }

TEST(SplitPatterns, Gpt2) {
  const PieceMatcher gpt2 = find_piece_matcher(kGpt2Pattern);
  // A run of spaces leaves its last one to the word after it; contractions
  // are lower case only.
  EXPECT_EQ(split_into_pieces("Hello world's  end\n\n 42 I'M", gpt2),
            (Pieces{"Hello", " world", "'s", " ", " end", "\n\n", " 42", " I", "'", "M"}));
  EXPECT_EQ(split_into_pieces("x\ty ?! \u00a0z  ", gpt2), (Pieces{"x", "\t", "y", " ?!", " ", "\u00a0", "z", "  "}));
}

TEST(SplitPatterns, Llama3AndQwen2) {
  const PieceMatcher llama3 = find_piece_matcher(kLlama3Pattern);
  EXPECT_EQ(split_into_pieces("I'M 12345 caf\u00e9\r\n\r\nok!!\n\t(x", llama3),
            (Pieces{"I", "'M", " ", "123", "45", " caf\u00e9", "\r\n\r\n", "ok", "!!\n", "\t", "(x"}));
  EXPECT_EQ(split_into_pieces("a  \n  b", llama3), (Pieces{"a", "  \n", " ", " b"}));
  // (?i) folds the long s to s; GPT-2's contractions are case-sensitive.
  EXPECT_EQ(split_into_pieces("x'\u017fa", llama3), (Pieces{"x", "'\u017f", "a"}));
  EXPECT_EQ(split_into_pieces("x'\u017fa", find_piece_matcher(kGpt2Pattern)), (Pieces{"x", "'", "\u017fa"}));
  const PieceMatcher qwen2 = find_piece_matcher(kQwen2Pattern);
  EXPECT_EQ(split_into_pieces("x 123", qwen2), (Pieces{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(find_piece_matcher(R"(\w+)"), nullptr);
}

TEST(Tokenizer, MergesLowestRankFirst) {
  // "abc": a+b has the lowest rank, and nothing merges ab with c.
  const Tokenizer first_ab = tokenizer_of(byte_level_tokenizer({{"a", "b"}, {"b", "c"}, {"a", "bc"}}));
  EXPECT_EQ(first_ab.encode("abc"), (std::vector<int32_t>{256, 'c'}));
  const Tokenizer first_bc = tokenizer_of(byte_level_tokenizer({{"b", "c"}, {"a", "b"}, {"a", "bc"}}));
  EXPECT_EQ(first_bc.encode("abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(first_bc.id_to_token(258), "abc");
  EXPECT_EQ(first_bc.decode(std::vector<int32_t>{258, 259, 'd'}), "abc<|end|>d");
  EXPECT_EQ(first_bc.decode(std::vector<int32_t>{258, 259, 'd'}, true), "abcd");
}

TEST(Tokenizer, ReadsMergesAsStringsOrPairs) {
  json config = byte_level_tokenizer({{"b", "c"}, {"a", "bc"}});
  config["model"]["merges"] = {"b c", "a bc"};
  EXPECT_EQ(tokenizer_of(config).encode("abc"), (std::vector<int32_t>{257}));
}

TEST(Tokenizer, CharactersOutsideTheVocabulary) {
  // As Hugging Face's BPE: dropped without an unknown token, else each one
  // unknown, or each run of them with fuse_unk.
  json config = byte_level_tokenizer({});
  config["model"]["vocab"].erase("z");
  config["model"]["vocab"]["<unk>"] = 122;
  EXPECT_EQ(tokenizer_of(config).encode("azzb z"), (std::vector<int32_t>{'a', 'b', ' '}));
  config["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(tokenizer_of(config).encode("azzb z"), (std::vector<int32_t>{'a', 122, 122, 'b', ' ', 122}));
  config["model"]["fuse_unk"] = true;
  EXPECT_EQ(tokenizer_of(config).encode("azzb z"), (std::vector<int32_t>{'a', 122, 'b', ' ', 122}));
}

TEST(PreTokenizers, DigitsAloneOrInRuns) {
  const std::vector<PreTokenizer> runs{DigitsPreTokenizer{.individual_digits = false}};
  EXPECT_EQ(pre_tokenize("ab 1234x5", runs), (Pieces{"ab ", "1234", "x", "5"}));
  const std::vector<PreTokenizer> each{DigitsPreTokenizer{.individual_digits = true}};
  EXPECT_EQ(pre_tokenize("ab 12x٣", each), (Pieces{"ab ", "1", "2", "x", "٣"}));
}

TEST(Tokenizer, SpecialTokensAreFoundFirst) {
  const Tokenizer tokenizer = tokenizer_of(byte_level_tokenizer({}));
  EXPECT_EQ(tokenizer.encode("a<|end|> b"), (std::vector<int32_t>{'a', 256, ' ', 'b'}));
}

TEST(Utf8, InvalidSequencesBecomeOneReplacementEach) {
  EXPECT_EQ(lossy_utf8("a\xF0\x9F\x98"), "a\uFFFD");            // truncated at the end
  EXPECT_EQ(lossy_utf8("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate
  EXPECT_EQ(lossy_utf8("\xC3"
                       "a\xC0\xAF\xE2\x82\xAC"),
            "\uFFFDa\uFFFD\uFFFD\u20AC");  // overlong '/'
  EXPECT_EQ(complete_utf8_prefix("ab\xE2\x82"), 2u);
  EXPECT_EQ(complete_utf8_prefix("ab\xE2\x82\xAC"), 5u);
  EXPECT_EQ(complete_utf8_prefix("ab\xFF"), 3u);
}

TEST(Nfc, ComposesAfterCanonicalOrdering) {
  EXPECT_EQ(nfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");  // Hangul jamo into a syllable
  // The dot below (class 220) sorts before the ring (230), and only it composes with A.
  EXPECT_EQ(nfc("A\u030a\u0323"), "\u1ea0\u030a");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");        // a singleton decomposition
  EXPECT_EQ(nfc("\u0958"), "\u0915\u093c");  // a composition exclusion
}

TEST(TokenStreamDecoder, HoldsBackPartialCharacters) {
  const Tokenizer tokenizer = tokenizer_of(byte_level_tokenizer({}));
  TokenStreamDecoder decoder(tokenizer);
  EXPECT_EQ(decoder.push(0xC3), "");
  EXPECT_EQ(decoder.push(0xA9), "\u00e9");
  EXPECT_EQ(decoder.push(0xE2), "");
  EXPECT_EQ(decoder.push('x'), "\uFFFDx");  // the held byte cannot start a character after all
  EXPECT_EQ(decoder.push(0xF0), "");
  EXPECT_EQ(decoder.finish(), "\uFFFD");
  EXPECT_EQ(decoder.finish(), "");
}

TEST(Tokenizer, Errors) {
  json config = byte_level_tokenizer({});
  config["model"]["type"] = "Unigram";
  EXPECT_EQ(error_of([&] { tokenizer_of(config); }),
            "tokenizer.json: model: type 'Unigram' (only BPE is) is not supported");
  config = byte_level_tokenizer({});
  config["model"].erase("merges");
  EXPECT_EQ(error_of([&] { tokenizer_of(config); }), "tokenizer.json: model has no field 'merges'");
  config = byte_level_tokenizer({});
  config["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\d+"}}}, {"behavior", "Isolated"}};
  EXPECT_EQ(error_of([&] { tokenizer_of(config); }),
            "tokenizer.json: Split: pattern '\\d+' is none of those the tokenizer implements (GPT-2's, Llama-3's, "
            "Qwen2's)");
  EXPECT_EQ(error_of([&] {
              Tokenizer::from_json("{", "", "dir/tokenizer.json");
            }).rfind("dir/tokenizer.json: the file is not valid JSON", 0),
            0u);
  EXPECT_EQ(error_of([] { Tokenizer::from_file("/no/such/tokenizer.json"); }),
            "Tokenizer: cannot read /no/such/tokenizer.json");

  const Tokenizer tokenizer = tokenizer_of(byte_level_tokenizer({}));
  EXPECT_EQ(error_of([&] { tokenizer.decode(std::vector<int32_t>{1, 300}); }),
            "tokenizer.json: no token has id 300 (ids run from 0 to 256)");
  EXPECT_EQ(error_of([&] { tokenizer.encode("ok\xFF"); }), "Tokenizer.encode: the text is not UTF-8 (at byte 2)");
}

}  // namespace
}  // namespace opgraph::llm

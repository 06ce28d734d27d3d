// opgraph.llm's C++ side: Tokenizer and TokenStreamDecoder (text to token
// ids and back from a Hugging Face tokenizer.json) and the generation loop
// (_Generator, which opgraph/llm/generator.py wraps), with the GIL released.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace opgraph::python {

void init_llm(nb::module_& m) {
  using llm::Tokenizer;
  using llm::TokenStreamDecoder;
  using release_gil = nb::call_guard<nb::gil_scoped_release>;

  nb::class_<Tokenizer>(m, "Tokenizer",
                        "A byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Llama-3, Qwen2, "
                        "SmolLM), encoding and decoding as Hugging Face's tokenizers does. What the file asks for "
                        "that is not implemented is an opgraph.Error naming the file and the setting.")
      .def_static(
          "from_file", [](const std::filesystem::path& path) { return Tokenizer::from_file(path.string()); },
          nb::arg("path"),
          "Reads a tokenizer.json, and the bos_token and eos_token of the tokenizer_config.json beside it where "
          "there is one.")
      .def_static(
          "from_json",
          [](const std::string& tokenizer_json, const std::string& config_json) {
            return Tokenizer::from_json(tokenizer_json, config_json);
          },
          nb::arg("tokenizer_json"), nb::arg("config_json") = "",
          "The same from the text of a tokenizer.json and, optionally, of a tokenizer_config.json.")
      .def(
          "encode",
          [](const Tokenizer& self, const std::string& text, bool add_special_tokens) {
            return self.encode(text, add_special_tokens);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true, release_gil(),
          "The token ids of `text`, with the post-processor's special tokens (a BOS, say) if "
          "`add_special_tokens`.")
      .def(
          "decode",
          [](const Tokenizer& self, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return self.decode(ids, skip_special_tokens);
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = false, release_gil(),
          "The text of `ids`; bytes that are not UTF-8 become U+FFFD. An id no token has is an opgraph.Error.")
      .def(
          "token_bytes",
          [](const Tokenizer& self, int32_t id) {
            const std::string bytes = self.token_bytes(id);
            return nb::bytes(bytes.data(), bytes.size());
          },
          nb::arg("id"), "The bytes a token stands for: possibly a part of a UTF-8 character.")
      .def("token_to_id", &Tokenizer::token_to_id, nb::arg("token"),
           "The id of a token as the vocabulary spells it, or None.")
      .def("id_to_token", &Tokenizer::id_to_token, nb::arg("id"),
           "The token of an id as the vocabulary spells it (in the byte-level alphabet).")
      .def("is_special", &Tokenizer::is_special, nb::arg("id"),
           "Whether the id is a special added token, which decode(skip_special_tokens=True) leaves out.")
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size, "One past the largest id.")
      .def_prop_ro("bos_id", &Tokenizer::bos_id, "The bos_token of tokenizer_config.json, or None.")
      .def_prop_ro("eos_id", &Tokenizer::eos_id, "The eos_token of tokenizer_config.json, or None.");

  nb::class_<TokenStreamDecoder>(m, "TokenStreamDecoder",
                                 "Decodes ids one at a time as a model makes them: push() returns the text that "
                                 "became complete, holding back the bytes of a UTF-8 character that later tokens may "
                                 "complete. The pushes' texts and finish() together are Tokenizer.decode of all the "
                                 "ids.")
      .def(nb::init<Tokenizer, bool>(), nb::arg("tokenizer"), nb::arg("skip_special_tokens") = false)
      .def("push", &TokenStreamDecoder::push, nb::arg("id"), "The text this id completes (often empty).")
      .def("finish", &TokenStreamDecoder::finish,
           "What is held back, each incomplete character as U+FFFD; the decoder then starts afresh.");

  using llm::GenerationResult;
  using llm::Generator;
  nb::class_<GenerationResult>(m, "_GenerationResult")
      .def_ro("tokens", &GenerationResult::tokens)
      .def_ro("text", &GenerationResult::text)
      .def_prop_ro("stop_reason", [](const GenerationResult& r) { return llm::stop_reason_name(r.reason); })
      .def_ro("prompt_tokens", &GenerationResult::prompt_tokens)
      .def_ro("prompt_seconds", &GenerationResult::prompt_seconds)
      .def_ro("decode_seconds", &GenerationResult::decode_seconds);
  nb::class_<Generator>(m, "_Generator")
      .def(
          "__init__",
          [](Generator* self, const std::filesystem::path& folder, int threads, const std::string& precision,
             const std::optional<std::string>& weights, std::optional<int64_t> group_size,
             const std::optional<std::string>& activations, int64_t prefill_chunk) {
            OPGRAPH_CHECK(precision == "float32" || precision == "bf16",
                          "precision: expected 'float32' or 'bf16', got '", precision, "'");
            llm::GeneratorOptions options{
                .threads = threads,
                .precision = precision == "bf16" ? Precision::BFloat16 : Precision::Float32,
                .weights = weight_quantization_from_string("weights", weights, group_size, activations),
                .prefill_chunk = prefill_chunk};
            nb::gil_scoped_release release;
            new (self) Generator(folder.string(), options);
          },
          nb::arg("folder"), nb::arg("threads"), nb::arg("precision"), nb::arg("weights").none(),
          nb::arg("group_size").none(), nb::arg("activations").none(), nb::arg("prefill_chunk"))
      .def(
          "generate",
          [](const Generator& self, const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
             double temperature, std::optional<int64_t> top_k, std::optional<double> top_p,
             std::optional<double> repetition_penalty, std::vector<std::string> stop, std::optional<uint64_t> seed,
             nb::object on_token) {
            llm::GenerationOptions options{.max_new_tokens = max_new_tokens,
                                           .sampling = {.temperature = temperature,
                                                        .top_k = top_k,
                                                        .top_p = top_p,
                                                        .repetition_penalty = repetition_penalty,
                                                        .seed = seed},
                                           .stop = std::move(stop)};
            llm::BatchTokenCallback callback;
            if (!on_token.is_none()) {
              callback = [&on_token](size_t sequence, int32_t token, std::string_view text) {
                nb::gil_scoped_acquire acquire;
                on_token(sequence, token, nb::str(text.data(), text.size()));
              };
            }
            nb::gil_scoped_release release;
            return self.generate_batch(prompts, options, callback);
          },
          nb::arg("prompts"), nb::arg("max_new_tokens"), nb::arg("temperature"), nb::arg("top_k").none(),
          nb::arg("top_p").none(), nb::arg("repetition_penalty").none(), nb::arg("stop"), nb::arg("seed").none(),
          nb::arg("on_token").none())
      .def_prop_ro("tokenizer", &Generator::tokenizer)
      .def_prop_ro("max_seq_len", &Generator::max_seq_len)
      .def_prop_ro("vocab_size", &Generator::vocab_size)
      .def_prop_ro("batches", &Generator::batches)
      .def_prop_ro("eos_token_ids", &Generator::eos_token_ids);
}

}  // namespace opgraph::python

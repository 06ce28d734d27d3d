// opgraph quantize: a model's linear layers with their weights stored as
// int8 or int4 levels and float32 scales (opgraph/graph/quantize.h), written
// to a new file that a Session loads as any other.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "model.h"
#include "opgraph/graph/quantize.h"
#include "opgraph/package/loader.h"
#include "report.h"

namespace opgraph::cli {
namespace {

size_t weight_bytes(const Weights& weights) {
  size_t bytes = 0;
  for (const auto& [name, weight] : weights) bytes += weight.nbytes();
  return bytes;
}

int quantize_main(const Args& args) {
  const std::string& weights = args.required("--weights");
  const std::optional<WeightQuantization> format = weight_format_from_name(weights);
  if (!format) {
    throw UsageError(detail::concat("--weights: expected int8, int4, int8_asym or int4_asym, got '", weights, "'"));
  }
  QuantizeOptions options;
  options.weights = *format;
  options.weights.group_size = args.integer("--group-size", default_group_size(options.weights.bits), 1);
  const std::span<const std::string> exclude = args.values("--exclude");
  options.exclude.assign(exclude.begin(), exclude.end());
  options.embeddings = args.has("--embeddings");
  OpgFile opg = load_opg(args.operand(0));
  // The packages the graph names, for its ops' schemas.
  std::vector<std::string> search_paths = session_options(args).package_paths;
  search_paths.push_back(std::filesystem::absolute(args.operand(0)).parent_path().string());
  load_packages(opg.graph.packages, search_paths);
  const size_t before = weight_bytes(opg.weights);
  const QuantizeReport report = quantize_weights(opg.graph, opg.weights, options);
  save_opg(args.operand(1), opg.graph, opg.weights);

  std::vector<TableRow> rows = {{"layer", "weight", "inputs", "outputs"}};
  for (const QuantizeReport::Layer& layer : report.quantized) {
    rows.push_back({layer.node, layer.weight, std::to_string(layer.inputs), std::to_string(layer.outputs)});
  }
  std::cout << "quantized (" << report.quantized.size() << " layers, " << weights << "):\n";
  print_table(std::cout, rows);
  if (!report.kept.empty()) {
    rows = {{"layer", "why"}};
    for (const auto& [node, why] : report.kept) rows.push_back({node, why});
    std::cout << "kept as they are (" << report.kept.size() << "):\n";
    print_table(std::cout, rows);
  }
  std::cout << "weights: " << format_bytes(before) << " -> " << format_bytes(weight_bytes(opg.weights))
            << ", written to " << args.operand(1) << "\n";
  return 0;
}

}  // namespace

Command quantize_command() {
  return {
      "quantize",
      "IN.opg OUT.opg",
      "store a model's linear layers as int8 or int4 weights, in a new file",
      "Each product with a constant float32 weight (aten::linear, and aten::matmul, aten::mm and aten::addmm "
      "by a matrix; the LM head included) becomes an opgraph::quantized_linear whose weight is kept as "
      "integer levels with a float32 scale per output and group of --group-size inputs: int8 symmetric, or "
      "int4 as llama.cpp's Q4_0; int8_asym and int4_asym add an int8 zero point per scale, each group's levels "
      "spanning its smallest weight to its largest (OpenVINO NNCF's INT8_ASYM and INT4_ASYM). A weight that other "
      "nodes read too (an embedding tied to the LM head) stays "
      "in the file for them. The products unpack the levels in registers where the CPU has AVX2 or AVX-512.",
      {{"--weights", "W", "int8, int4, int8_asym or int4_asym (required)"},
       {"--group-size", "G",
        "inputs sharing a scale: a multiple of 32 that divides each layer's inputs (default: all of them for "
        "int8, 32 for int4)"},
       {"--exclude", "PATTERN", "leave a layer whose node or weight name matches the glob PATTERN as it is", true},
       {"--embeddings", "", "quantize each embedding table too (aten::embedding becomes opgraph::quantized_embedding)"},
       package_path_flag()},
      quantize_main};
}

}  // namespace opgraph::cli

// opgraph inspect: what a model holds (inputs, outputs, nodes with their
// inferred shapes, weights, packages), after loading and verifying it; with
// --passes, also what each graph pass rewrites in it at load.
#include <algorithm>
#include <iostream>

#include "commands.h"
#include "model.h"
#include "report.h"

namespace opgraph::cli {
namespace {

std::string node_input_str(const NodeInput& input) {
  if (input.is_none()) return "None";
  return input.is_list ? "[" + joined(input.values) + "]" : input.values[0];
}

void print_values(const char* heading, const std::vector<ValueInfo>& values) {
  std::cout << heading << " (" << values.size() << "):\n";
  std::vector<TableRow> rows;
  for (const ValueInfo& value : values) rows.push_back({value.name, value.type_str()});
  print_table(std::cout, rows);
}

// Each pass of the list, and the nodes it made or changed in a Session's
// load of the model with the same options.
void print_passes(const std::string& path, const Args& args) {
  const Session session(path, session_options(args));
  std::cout << "passes (" << session.pass_reports().size() << "):\n";
  std::vector<TableRow> rows = {{"pass", "rewritten", "removed", "nodes"}};
  for (const PassReport& report : session.pass_reports()) {
    if (report.skipped) {
      rows.push_back({report.pass, "-", "-", "(disabled, or not for this device)"});
      continue;
    }
    rows.push_back({report.pass, std::to_string(report.rewritten.size()), std::to_string(report.removed),
                    joined(report.rewritten, "-")});
  }
  print_table(std::cout, rows);
}

int inspect_main(const Args& args) {
  const std::string& path = args.operand();
  // The session loads the packages and verifies the graph, which it keeps
  // as the file has it; the weights are read again from the file, which only
  // maps it.
  SessionOptions options = session_options(args);
  options.optimize = false;
  const Session session(path, options);
  const OpgFile opg = load_opg(path);
  const Graph& graph = session.graph();
  const std::unordered_map<std::string, ValueInfo> types = infer_shapes(graph);

  std::cout << "model: " << path << "\n";
  std::cout << "graph: " << (graph.name.empty() ? "(unnamed)" : graph.name) << ", .opg format version " << kOpgVersion
            << "\n";
  print_values("inputs", session.inputs());
  print_values("outputs", session.outputs());

  std::cout << "nodes (" << graph.nodes.size() << "):\n";
  // The model line behind each node, for graphs extracted from a model.
  const bool sources =
      std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const Node& n) { return !n.source.empty(); });
  std::vector<TableRow> rows = {{"#", "name", "op", "inputs", "outputs", "attributes"}};
  if (sources) rows[0].push_back("source");
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    std::vector<std::string> inputs, outputs, attrs;
    for (const NodeInput& input : node.inputs) inputs.push_back(node_input_str(input));
    for (const std::string& output : node.outputs) outputs.push_back(output + ": " + types.at(output).type_str());
    for (const NodeAttr& attr : node.attrs) attrs.push_back(attr.name + "=" + attr_str(attr.value));
    rows.push_back(
        {std::to_string(i), node.name, node.op_type, joined(inputs, "-"), joined(outputs, "-"), joined(attrs)});
    if (sources) rows.back().push_back(node.source.empty() ? "-" : node.source);
  }
  print_table(std::cout, rows);

  size_t weight_bytes = 0;
  for (const auto& [name, weight] : opg.weights) weight_bytes += weight.nbytes();
  std::cout << "weights: " << opg.weights.size() << " tensors, " << weight_bytes << " bytes ("
            << format_bytes(weight_bytes) << ")\n";
  std::cout << "packages: " << joined(graph.packages, "none") << "\n";
  if (args.has("--passes")) print_passes(path, args);
  return 0;
}

}  // namespace

Command inspect_command() {
  return {"inspect",
          "model.opg",
          "show a model's inputs, outputs, nodes with inferred shapes, weights and packages",
          "The model is loaded and verified as for a run, so its op packages must be found. The nodes are the "
          "graph's as the file holds it; --passes shows what each graph pass rewrites at load, in the order "
          "they run, with --precision and --disable-pass as a run would take them.",
          {package_path_flag(),
           {"--passes", "", "show what each graph pass rewrites at load"},
           precision_flag(),
           disable_pass_flag()},
          inspect_main};
}

}  // namespace opgraph::cli

// aten::cat drops operands with no elements, and the views that made them
// for the cat alone.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {

// aten::cat drops operands with no elements: the empty key-value cache that a
// transformers decoder exported with use_cache=True concatenates its keys and
// values to. With one operand left, its producer computes the cat's output
// itself, and the rewrites after it see what feeds the attention.
void drop_empty_cat_operands(PassContext& context) {
  const OpDef* const cat_op = context.op("aten::cat");
  const OpDef* const slice = context.op("aten::slice.Tensor");
  // A slice or a reshape: a view of its input, which does nothing else.
  const auto is_view = [&](const Node& node) {
    const OpDef* op = context.op_of(node);
    return op != nullptr && (op == slice || op->reshapes_input);
  };
  Graph& graph = context.graph;
  const std::unordered_map<std::string, ValueInfo>& values = context.values();
  const auto empty = [&](const std::string& value) {
    const SymbolicShape& shape = values.at(value).shape;
    return std::any_of(shape.begin(), shape.end(), [](const Dim& d) { return !d.is_symbolic() && d.size == 0; });
  };
  Rewriter rewriter(context);
  rewriter.for_each_node([&](size_t i) {
    Node& cat = graph.nodes[i];
    if (context.op_of(cat) != cat_op || cat.inputs.empty() || !cat.inputs[0].is_list) return;
    std::vector<std::string>& operands = cat.inputs[0].values;
    const DType dtype = values.at(cat.outputs[0]).dtype;
    // Dropping an operand of another dtype could change the promoted result's.
    const bool one_dtype = std::all_of(operands.begin(), operands.end(),
                                       [&](const std::string& value) { return values.at(value).dtype == dtype; });
    const auto kept = std::count_if(operands.begin(), operands.end(), [&](const std::string& v) { return !empty(v); });
    if (!one_dtype || kept == 0 || kept == static_cast<std::ptrdiff_t>(operands.size())) return;
    for (const std::string& value : operands) {
      // A view that made the empty operand for the cat alone goes too: Phi-3
      // concatenates the rotated features to the slice of those it passes
      // through, none where it rotates them all, and that slice would keep
      // the attention rewrite from seeing q and k read once.
      const Node* producer = rewriter.producer(value);
      if (empty(value) && producer != nullptr && rewriter.uses(value) == 1 && producer->outputs.size() == 1 &&
          is_view(*producer)) {
        rewriter.remove(*producer);
      }
    }
    std::erase_if(operands, empty);
    if (operands.size() != 1) return;
    Node* producer = rewriter.sole_producer(NodeInput::value(operands[0]));
    if (producer != nullptr && producer->outputs.size() == 1) rewriter.absorb(*producer, i);
  });
  rewriter.finish();
}

}  // namespace opgraph

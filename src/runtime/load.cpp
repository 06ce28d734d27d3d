#include "runtime/load.h"

#include "graph/passes/pass.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/device_backend.h"
#include "opgraph/package/loader.h"
#include "runtime/pass_list.h"

namespace opgraph {
namespace {

void check_weights(const WeightQuantization& weights, Device device) {
  if (weights.bits == 0) return;
  OPGRAPH_CHECK(weights.bits == 8 || weights.bits == 4,
                "weights: expected float32 (0 bits), int8 (8 bits) or int4 (4 bits), got ", weights.bits, " bits");
  const std::string name = detail::concat("weights int", weights.bits);
  OPGRAPH_CHECK(device.type == DeviceType::CPU, name, ": runs on the CPU only, and the session runs on ",
                device_str(device));
  OPGRAPH_CHECK(cpu_capability() != CpuCapability::Default, name,
                ": needs a CPU with AVX2 and FMA or with AVX-512; this one runs ",
                cpu_capability_name(cpu_capability()));
  // The products' kernels scale their sums block by block of 32 rows.
  OPGRAPH_CHECK(weights.group_size == 0 || (weights.group_size > 0 && weights.group_size % 32 == 0), name,
                ": group size expected 0 (a scale per output channel) or a positive multiple of 32, got ",
                weights.group_size);
}

void check_options(const SessionOptions& options) {
  OPGRAPH_CHECK(options.threads >= 0, "SessionOptions::threads must be 0 (the global pool) or a count, got ",
                options.threads);
  // A device's kernels arrive with its backend, which must be there first.
  check_device(options.device);
  if (options.precision == Precision::BFloat16) {
    OPGRAPH_CHECK(options.device.type == DeviceType::CPU,
                  "precision bf16: runs on the CPU only, and the session runs on ", device_str(options.device));
    OPGRAPH_CHECK(cpu_has_bf16(),
                  "precision bf16: needs a CPU that multiplies bfloat16 (AVX-512 BF16 or AMX); this "
                  "one runs ",
                  cpu_capability_name(cpu_capability()), " without it");
  }
  check_weights(options.weights, options.device);
  OPGRAPH_CHECK(
      options.weights.bits == 0 || options.products == ProductEngine::Auto || options.products == ProductEngine::Panels,
      "products: int", options.weights.bits, " weights run on opgraph's panels only");
  check_pass_names(options.disabled_passes);
}

std::vector<const KernelFn*> device_kernels(const ResolvedGraph& resolved, Device device) {
  std::vector<const KernelFn*> kernels;
  for (const ResolvedNode& node : resolved.nodes) {
    const KernelFn& kernel = node.op->kernels[static_cast<size_t>(device.type)];
    OPGRAPH_CHECK(static_cast<bool>(kernel), node_label(*node.node), ": the op has no ", device_type_name(device.type),
                  " kernel, and the session runs on ", device_str(device));
    kernels.push_back(&kernel);
  }
  return kernels;
}

// OpDef::prepare of each node whose op has one, given the node's constant
// inputs as the device holds them.
std::vector<std::unique_ptr<KernelState>> prepare_kernels(const LoadedGraph& loaded, const SessionOptions& options) {
  const ResolvedGraph& resolved = loaded.resolved;
  std::vector<std::unique_ptr<KernelState>> states;
  for (const ResolvedNode& node : resolved.nodes) {
    if (!node.op->prepare) {
      states.emplace_back();
      continue;
    }
    std::vector<Tensor> constants;
    for (const std::optional<ValueId>& input : node.inputs) {
      const bool constant = input && resolved.is_constant(*input);
      constants.push_back(constant ? loaded.constants[*input - resolved.inputs.size()] : Tensor());
    }
    try {
      states.push_back(node.op->prepare(
          {constants, node.attrs, options.precision, options.device, options.weights, options.products}));
    } catch (...) {
      rethrow_in_node(*node.node);
    }
  }
  return states;
}

}  // namespace

std::unique_ptr<const LoadedGraph> load_graph(Graph graph, Weights weights, const SessionOptions& options,
                                              const std::vector<std::string>& search_paths) {
  check_options(options);
  auto loaded = std::make_unique<LoadedGraph>();
  loaded->num_inputs = graph.inputs.size();
  loaded->num_outputs = graph.outputs.size();
  loaded->graph_states = graph.states;
  loaded->graph = graph.states.empty() ? std::move(graph) : with_states_as_inputs(graph);
  Graph& as_run = loaded->graph;
  // Taken before the passes, which may drop a constant no node reads.
  for (const StateInfo& state : loaded->graph_states) {
    auto initial = weights.find(state.initial);
    loaded->state_initials.push_back(initial == weights.end() ? Tensor()
                                                              : initial->second.contiguous().to(options.device));
  }
  load_packages(as_run.packages, search_paths);
  PassContext context(as_run, weights, Registry::global(), options.precision, options.weights);
  // Symbolic shape inference also checks every node's shapes (as verify()
  // does), first of the graph as given, so that errors name its nodes.
  context.resolved();
  if (options.optimize) {
    loaded->pass_reports =
        run_passes(context, {options.device, options.precision, options.weights, options.disabled_passes});
  }
  loaded->resolved = context.resolved();
  loaded->types = context.types();
  check_state_updates(loaded->graph_states, loaded->types, loaded->resolved.values);
  check_weights(as_run, weights);
  for (const ValueInfo& constant : as_run.constants) {
    loaded->constants.push_back(weights.at(constant.name).contiguous().to(options.device));
  }
  loaded->kernels = device_kernels(loaded->resolved, options.device);
  loaded->states = prepare_kernels(*loaded, options);
  return loaded;
}

}  // namespace opgraph

#include "opgraph/runtime/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>

#include "graph/passes/pass.h"
#include "graph/resolved.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/device_backend.h"
#include "opgraph/core/thread_pool.h"
#include "opgraph/package/loader.h"
#include "opgraph/runtime/memory_plan.h"
#include "runtime/output_pool.h"
#include "runtime/pass_list.h"
#include "runtime/trace.h"

namespace opgraph {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kNotInArena = static_cast<size_t>(-1);

// What a run needs for one set of symbol sizes.
struct ExecutionPlan {
  std::vector<TensorMeta> metas;      // by ValueId
  std::vector<Attrs> attrs;           // by node: bound for these sizes where computed from symbols
  std::vector<size_t> arena_offsets;  // by ValueId; kNotInArena for values with memory of their own
  MemoryPlan memory;
};

// An intermediate value: written by one node, read by later ones, and dead
// once the last of them has run. Only these live in the arena.
struct Lifetime {
  ValueId value;
  size_t first_use, last_use;  // node indices
};

// A node as a run calls it: its kernel, and where its inputs and outputs sit
// in a workspace's tensors.
struct NodeCall {
  const KernelFn* kernel;
  const Attrs* attrs;
  size_t first;  // inputs at [first, first + inputs), outputs after them
  size_t inputs, outputs;
  uint64_t constant_inputs;  // bit k: input k is one of the graph's constants (KernelContext)
  bool shaped_by_run;        // see Impl::shaped_by_run
  bool aliases;              // its output is its input's memory, reshaped: nothing to run (Impl::storage_of)
};

// A value that each run binds anew (a graph input, or a node output handed
// to the caller), and the places in a workspace's tensors that hold it.
struct RunBinding {
  ValueId value;
  std::vector<size_t> slots;
};

// What one run works in, made for one plan and reused by the runs of that
// plan: the arena, and every value and every node's argument tensors
// already made over it, so that a run binds only its inputs and fresh
// outputs and then calls the kernels, with no allocation and no lookup.
// One per run in flight.
struct Workspace {
  std::shared_ptr<const ExecutionPlan> plan;
  Tensor arena;
  std::vector<Tensor> values;   // by ValueId
  std::vector<Tensor> tensors;  // the nodes' arguments, see NodeCall
};

std::string names_of(const std::vector<ValueInfo>& values) {
  std::string names;
  for (const ValueInfo& value : values) names += (names.empty() ? "" : ", ") + value.name;
  return names;
}

// Where a session on `device` takes its inputs from: host inputs are copied
// to the device, inputs already there are read in place.
std::string input_devices(Device device) {
  return device.type == DeviceType::CPU ? "cpu" : "cpu or " + device_str(device);
}

std::string metas_str(std::span<const Tensor> tensors) {
  std::string text;
  for (const Tensor& t : tensors) text += (text.empty() ? "" : ", ") + (t.defined() ? t.str() : std::string("None"));
  return text;
}

// A small number per calling thread, for the trace's thread lanes.
int thread_number() {
  static std::atomic<int> next{0};
  thread_local const int number = next++;
  return number;
}

}  // namespace

struct Session::Impl {
  Graph graph;  // the resolved nodes point into it: it never moves
  SessionOptions options;
  ResolvedGraph resolved;
  std::vector<PassReport> pass_reports;
  std::vector<ValueInfo> output_info;
  std::vector<Tensor> constants;       // by position in graph.constants, contiguous
  ConstantCache constant_cache;        // what kernels derive from the constants, kept across runs
  std::vector<NodeCall> calls;         // by node
  std::vector<size_t> input_bindings;  // into bindings, by graph input
  std::vector<RunBinding> bindings;
  std::vector<size_t> binding_of;  // by ValueId: index into bindings, or -1 for none
  std::vector<Lifetime> lifetimes;
  // By ValueId: the value's shape is known only in a run, as it comes from an
  // op with data-dependent shapes (aten::nonzero) or from a node that reads
  // such a value. Those values are not planned: the node that makes them
  // infers their shapes from its inputs of that run (for an op with
  // data-dependent shapes, their largest shapes), allocates them and binds
  // them once it ran. The rest of the graph is planned as if they were not
  // there, so a graph without such ops is planned and run as it would be
  // without this.
  std::vector<bool> shaped_by_run;
  // By ValueId: the value whose memory holds it. Itself, but for
  // - the output of a node whose op reshapes its input
  //   (OpDef::reshapes_input), which is that input's memory under its own
  //   shape: the node copies nothing. Only inputs the session holds for the
  //   whole run are shared that way (a value in the arena, whose lifetime
  //   then lasts as long as the output's, or a constant);
  // - the output of a node whose op may write it over an input
  //   (OpDef::in_place_input), where that input is a value in the arena that
  //   no later node reads;
  // and only into outputs that are not handed to the caller.
  std::vector<ValueId> storage_of;
  std::shared_ptr<OutputPool> output_pool = std::make_shared<OutputPool>();  // the CPU outputs' buffers
  std::unique_ptr<ThreadPool> own_pool;  // when options.threads asks for a count of its own
  DeviceBackend* backend = nullptr;      // options.device's, where it is not the CPU
  Clock::time_point epoch = Clock::now();

  std::mutex plans_mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<const ExecutionPlan>> plans;  // by symbol sizes
  std::shared_ptr<const ExecutionPlan> last_plan;
  std::shared_ptr<const ExecutionPlan> static_plan;  // the only plan of a graph without symbols

  std::mutex workspaces_mutex;
  std::vector<std::unique_ptr<Workspace>> free_workspaces;  // one per run in flight at most

  std::atomic<uint64_t> runs{0};
  std::mutex profile_mutex;
  std::vector<ProfileEvent> events;

  Impl(Graph graph, Weights weights, SessionOptions options, const std::vector<std::string>& search_paths);
  std::vector<Tensor> run(std::span<const Tensor> inputs);
  std::vector<Tensor> run_by_name(std::span<const std::pair<std::string, Tensor>> inputs);

 private:
  void bind_constants(const Weights& weights);
  void resolve_kernels();
  void find_shaped_by_run();
  std::vector<bool> allocated_apart() const;
  void find_aliases();
  void find_in_place_outputs(const std::vector<bool>& apart);
  void compute_lifetimes();
  void find_run_bindings();
  std::vector<int64_t> check_inputs(std::span<const Tensor> inputs, DimBindings& dims) const;
  std::shared_ptr<const ExecutionPlan> plan_for(const std::vector<int64_t>& key, const DimBindings& dims);
  std::shared_ptr<const ExecutionPlan> make_plan(const DimBindings& dims) const;
  std::unique_ptr<Workspace> take_workspace(const std::shared_ptr<const ExecutionPlan>& plan);
  void fill_workspace(Workspace& workspace) const;
  void return_workspace(std::unique_ptr<Workspace> workspace);
  void run_shaped_by_run(size_t i, const KernelContext& context, Workspace& workspace) const;
  // Node i's attributes in a run of `plan`: bound for its sizes where they are computed from symbols.
  const Attrs& attrs_of(size_t i, const ExecutionPlan& plan) const {
    return resolved.nodes[i].symbolic_attrs ? plan.attrs[i] : *calls[i].attrs;
  }
};

Session::Impl::Impl(Graph graph_in, Weights weights, SessionOptions options_in,
                    const std::vector<std::string>& search_paths)
    : graph(std::move(graph_in)), options(std::move(options_in)) {
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
  load_packages(graph.packages, search_paths);
  PassContext context(graph, weights, Registry::global(), options.precision);
  // Symbolic shape inference also checks every node's shapes (as verify() does),
  // first of the graph as given, so that errors name its nodes.
  context.resolved();
  check_pass_names(options.disabled_passes);
  if (options.optimize) {
    pass_reports = run_passes(context, {options.device, options.precision, options.disabled_passes});
  }
  resolved = context.resolved();
  const std::vector<ValueInfo>& types = context.types();
  find_shaped_by_run();
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    output_info.push_back(types[resolved.outputs[i]]);
    output_info.back().name = graph.outputs[i];
    if (shaped_by_run[resolved.outputs[i]]) std::ranges::fill(output_info.back().shape, Dim("?"));
  }
  bind_constants(weights);
  find_aliases();
  resolve_kernels();
  compute_lifetimes();
  find_run_bindings();
  if (resolved.symbols.empty()) static_plan = plan_for({}, {});
  if (options.threads > 0) own_pool = std::make_unique<ThreadPool>(options.threads);
  if (options.device.type != DeviceType::CPU) backend = &device_backend(options.device.type);
}

void Session::Impl::bind_constants(const Weights& weights) {
  check_weights(graph, weights);
  for (const ValueInfo& constant : graph.constants) {
    constants.push_back(weights.at(constant.name).contiguous().to(options.device));
  }
}

void Session::Impl::resolve_kernels() {
  size_t first = 0;
  for (const ResolvedNode& node : resolved.nodes) {
    const KernelFn& kernel = node.op->kernels[static_cast<size_t>(options.device.type)];
    OPGRAPH_CHECK(static_cast<bool>(kernel), node_label(*node.node), ": the op has no ",
                  device_type_name(options.device.type), " kernel, and the session runs on ",
                  device_str(options.device));
    uint64_t constant_inputs = 0;
    for (size_t k = 0; k < node.inputs.size() && k < 64; ++k) {
      if (node.inputs[k] && resolved.is_constant(*node.inputs[k])) constant_inputs |= uint64_t{1} << k;
    }
    const bool by_run = !node.outputs.empty() && shaped_by_run[node.outputs[0]];
    const bool aliases =
        node.op->reshapes_input && node.outputs.size() == 1 && storage_of[node.outputs[0]] != node.outputs[0];
    calls.push_back(
        {&kernel, &node.attrs, first, node.inputs.size(), node.outputs.size(), constant_inputs, by_run, aliases});
    first += node.inputs.size() + node.outputs.size();
  }
}

void Session::Impl::find_shaped_by_run() {
  shaped_by_run.assign(resolved.values.size(), false);
  for (const ResolvedNode& node : resolved.nodes) {
    bool by_run = node.op->data_dependent_shapes;
    for (const std::optional<ValueId>& input : node.inputs) by_run = by_run || (input && shaped_by_run[*input]);
    for (ValueId output : node.outputs) shaped_by_run[output] = by_run;
  }
}

// By ValueId: a node output returned to the caller or shaped by the run,
// which is allocated on its own rather than in the arena.
std::vector<bool> Session::Impl::allocated_apart() const {
  std::vector<bool> apart = shaped_by_run;
  for (ValueId id : resolved.outputs) apart[id] = true;
  return apart;
}

void Session::Impl::find_aliases() {
  const std::vector<bool> apart = allocated_apart();
  storage_of.resize(resolved.values.size());
  std::iota(storage_of.begin(), storage_of.end(), ValueId{0});
  for (const ResolvedNode& node : resolved.nodes) {
    if (!node.op->reshapes_input || node.outputs.size() != 1 || node.inputs.empty() || !node.inputs[0]) continue;
    const ValueId root = storage_of[*node.inputs[0]], output = node.outputs[0];
    const bool held = resolved.is_constant(root) || (resolved.defined_by_node(root) && !apart[root]);
    if (held && !apart[output]) storage_of[output] = root;
  }
  find_in_place_outputs(apart);
}

void Session::Impl::find_in_place_outputs(const std::vector<bool>& apart) {
  // By ValueId of a storage: the last node that reads any value it holds.
  std::vector<size_t> last_read(resolved.values.size(), 0);
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    for (const std::optional<ValueId>& input : resolved.nodes[i].inputs) {
      if (input) last_read[storage_of[*input]] = i;
    }
  }
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    const ResolvedNode& node = resolved.nodes[i];
    const std::optional<size_t> k = node.op->in_place_input;
    if (!k || node.outputs.size() != 1 || *k >= node.inputs.size() || !node.inputs[*k]) continue;
    const ValueId root = storage_of[*node.inputs[*k]], output = node.outputs[0];
    // No later node may read the input, nor this one through another argument.
    bool read_elsewhere = false;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      read_elsewhere = read_elsewhere || (j != *k && node.inputs[j] && storage_of[*node.inputs[j]] == root);
    }
    const bool overwritable = resolved.defined_by_node(root) && !apart[root] && last_read[root] == i && !read_elsewhere;
    if (!overwritable || apart[output] || storage_of[output] != output) continue;
    // The output and the values that reshape it move into the input's memory.
    for (ValueId& storage : storage_of) {
      if (storage == output) storage = root;
    }
    last_read[root] = std::max(last_read[root], last_read[output]);
  }
}

void Session::Impl::compute_lifetimes() {
  const std::vector<bool> apart = allocated_apart();
  std::vector<size_t> lifetime_of(resolved.values.size(), kNotInArena);
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    for (const std::optional<ValueId>& input : resolved.nodes[i].inputs) {
      if (input && lifetime_of[*input] != kNotInArena) lifetimes[lifetime_of[*input]].last_use = i;
    }
    for (ValueId output : resolved.nodes[i].outputs) {
      // Held in its input's memory: reading it keeps that memory alive.
      if (storage_of[output] != output) {
        lifetime_of[output] = lifetime_of[storage_of[output]];
        continue;
      }
      if (apart[output]) continue;
      lifetime_of[output] = lifetimes.size();
      lifetimes.push_back({output, i, i});
    }
  }
}

// Graph inputs and the node outputs returned to the caller change from run to
// run; constants and the values in the arena stay where the workspace put them.
void Session::Impl::find_run_bindings() {
  std::vector<bool> in_arena(resolved.values.size(), false);
  for (const Lifetime& lifetime : lifetimes) in_arena[lifetime.value] = true;
  constexpr size_t kUnbound = static_cast<size_t>(-1);
  binding_of.assign(resolved.values.size(), kUnbound);
  auto slots_of = [&](ValueId value) -> std::vector<size_t>* {
    const bool per_run = value < resolved.inputs.size() ||
                         (resolved.defined_by_node(value) && !in_arena[value] && storage_of[value] == value);
    if (!per_run) return nullptr;
    if (binding_of[value] == kUnbound) {
      binding_of[value] = bindings.size();
      bindings.push_back({value, {}});
    }
    return &bindings[binding_of[value]].slots;
  };
  for (ValueId input : resolved.inputs) {
    slots_of(input);
    input_bindings.push_back(binding_of[input]);
  }
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    const ResolvedNode& node = resolved.nodes[i];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!node.inputs[k]) continue;
      if (std::vector<size_t>* slots = slots_of(*node.inputs[k])) slots->push_back(calls[i].first + k);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (std::vector<size_t>* slots = slots_of(node.outputs[k]))
        slots->push_back(calls[i].first + calls[i].inputs + k);
    }
  }
}

std::vector<int64_t> Session::Impl::check_inputs(std::span<const Tensor> inputs, DimBindings& dims) const {
  OPGRAPH_CHECK(inputs.size() == graph.inputs.size(), "expected ", graph.inputs.size(), " inputs (",
                names_of(graph.inputs), "), got ", inputs.size());
  std::unordered_map<std::string, const std::string*> bound_by;  // symbol -> the input that set it
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueInfo& declared = graph.inputs[k];
    const Tensor& given = inputs[k];
    OPGRAPH_CHECK(given.defined(), "input '", declared.name, "' is not given (an undefined tensor)");
    OPGRAPH_CHECK(given.device().type == DeviceType::CPU || given.device() == options.device, "input '", declared.name,
                  "': expected a tensor on ", input_devices(options.device), ", got ", given.str(), " on ",
                  device_str(given.device()));
    auto mismatch = [&](const std::string& why) {
      return Error(
          detail::concat("input '", declared.name, "': expected ", declared.type_str(), ", got ", given.str(), why));
    };
    if (given.dtype() != declared.dtype || given.dim() != static_cast<int64_t>(declared.shape.size())) {
      throw mismatch("");
    }
    for (size_t d = 0; d < declared.shape.size(); ++d) {
      const Dim& dim = declared.shape[d];
      const int64_t size = given.shape()[d];
      if (!dim.is_symbolic()) {
        if (size != dim.size) throw mismatch("");
        continue;
      }
      auto [it, first] = dims.emplace(dim.symbol, size);
      if (first) bound_by[dim.symbol] = &declared.name;
      if (it->second != size) {
        throw mismatch(
            detail::concat(" (", dim.symbol, " is ", it->second, ", from input '", *bound_by[dim.symbol], "')"));
      }
    }
  }
  std::vector<int64_t> key;
  for (const std::string& symbol : resolved.symbols) key.push_back(dims.at(symbol));
  return key;
}

std::shared_ptr<const ExecutionPlan> Session::Impl::make_plan(const DimBindings& dims) const {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->metas = infer_metas(graph, resolved, dims, &plan->attrs);
  std::vector<BufferRequest> requests;
  for (const Lifetime& lifetime : lifetimes) {
    requests.push_back({plan->metas[lifetime.value].nbytes(), lifetime.first_use, lifetime.last_use});
  }
  plan->memory = plan_memory(requests);
#ifndef NDEBUG
  verify_memory_plan(requests, plan->memory);
#endif
  plan->arena_offsets.assign(resolved.values.size(), kNotInArena);
  for (size_t i = 0; i < lifetimes.size(); ++i) plan->arena_offsets[lifetimes[i].value] = plan->memory.offsets[i];
  for (const ResolvedNode& node : resolved.nodes) {
    if (node.outputs.size() != 1 || storage_of[node.outputs[0]] == node.outputs[0]) continue;
    const TensorMeta &output = plan->metas[node.outputs[0]], &held = plan->metas[storage_of[node.outputs[0]]];
    OPGRAPH_CHECK(output.dtype == held.dtype && output.numel() == held.numel(), node_label(*node.node),
                  ": its op is defined to ", node.op->reshapes_input ? "reshape its input" : "write over an input",
                  ", but its output ", output.str(), " does not hold the elements of that input's ", held.str());
  }
  return plan;
}

std::shared_ptr<const ExecutionPlan> Session::Impl::plan_for(const std::vector<int64_t>& key, const DimBindings& dims) {
  {
    std::lock_guard<std::mutex> lock(plans_mutex);
    if (auto it = plans.find(key); it != plans.end()) return last_plan = it->second;
  }
  // Shape inference runs unlocked; a plan another run made meanwhile wins.
  std::shared_ptr<const ExecutionPlan> plan = make_plan(dims);
  std::lock_guard<std::mutex> lock(plans_mutex);
  return last_plan = plans.emplace(key, std::move(plan)).first->second;
}

std::unique_ptr<Workspace> Session::Impl::take_workspace(const std::shared_ptr<const ExecutionPlan>& plan) {
  std::unique_ptr<Workspace> workspace;
  {
    std::lock_guard<std::mutex> lock(workspaces_mutex);
    if (!free_workspaces.empty()) {
      workspace = std::move(free_workspaces.back());
      free_workspaces.pop_back();
    }
  }
  if (!workspace) workspace = std::make_unique<Workspace>();
  if (workspace->plan != plan) {
    workspace->plan = plan;
    fill_workspace(*workspace);
  }
  return workspace;
}

void Session::Impl::fill_workspace(Workspace& workspace) const {
  const ExecutionPlan& plan = *workspace.plan;
  if (!workspace.arena.defined() || workspace.arena.nbytes() < plan.memory.peak_bytes) {
    workspace.arena = Tensor::empty({static_cast<int64_t>(plan.memory.peak_bytes)}, DType::UInt8, options.device);
  }
  auto* arena = static_cast<uint8_t*>(workspace.arena.data());
  workspace.values.assign(resolved.values.size(), Tensor());
  for (size_t k = 0; k < constants.size(); ++k) workspace.values[resolved.constants[k]] = constants[k];
  for (const Lifetime& lifetime : lifetimes) {
    const TensorMeta& meta = plan.metas[lifetime.value];
    workspace.values[lifetime.value] =
        Tensor::from_blob(arena + plan.arena_offsets[lifetime.value], meta.shape, {}, meta.dtype, {}, options.device);
  }
  for (ValueId value = 0; value < storage_of.size(); ++value) {
    if (storage_of[value] != value)
      workspace.values[value] = workspace.values[storage_of[value]].view(plan.metas[value].shape);
  }
  workspace.tensors.clear();
  for (const ResolvedNode& node : resolved.nodes) {
    for (const std::optional<ValueId>& id : node.inputs)
      workspace.tensors.push_back(id ? workspace.values[*id] : Tensor());
    for (ValueId id : node.outputs) workspace.tensors.push_back(workspace.values[id]);
  }
}

void Session::Impl::return_workspace(std::unique_ptr<Workspace> workspace) {
  // The next run may take it on another thread's stream: the work this run
  // queued on its arena must be done first (a run that failed may have left
  // some; one that succeeded has waited already).
  if (backend) {
    try {
      backend->synchronize(options.device.index);
    } catch (const Error&) {
      return;  // a device in error: drop the workspace rather than reuse its memory
    }
  }
  // The run's inputs and outputs belong to the caller: let them go.
  for (const RunBinding& binding : bindings) {
    workspace->values[binding.value] = Tensor();
    for (size_t slot : binding.slots) workspace->tensors[slot] = Tensor();
  }
  std::lock_guard<std::mutex> lock(workspaces_mutex);
  free_workspaces.push_back(std::move(workspace));
}

std::vector<Tensor> Session::Impl::run(std::span<const Tensor> inputs) {
  DimBindings dims;
  const std::vector<int64_t> key = check_inputs(inputs, dims);
  const std::shared_ptr<const ExecutionPlan> plan = static_plan ? static_plan : plan_for(key, dims);

  // The run's own workspace, handed back however the run ends.
  struct WorkspaceLease {
    Impl& impl;
    std::unique_ptr<Workspace> workspace;
    ~WorkspaceLease() { impl.return_workspace(std::move(workspace)); }
  } lease{*this, take_workspace(plan)};
  Workspace& workspace = *lease.workspace;

  auto bind = [&](const RunBinding& binding, Tensor tensor) {
    for (size_t slot : binding.slots) workspace.tensors[slot] = tensor;
    workspace.values[binding.value] = std::move(tensor);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    bind(bindings[input_bindings[k]], inputs[k].contiguous().to(options.device));
  }
  for (const RunBinding& binding : bindings) {
    if (resolved.defined_by_node(binding.value) && !shaped_by_run[binding.value]) {
      const TensorMeta& meta = plan->metas[binding.value];
      bind(binding, backend ? Tensor::empty(meta, options.device) : output_pool->take(meta));
    }
  }

  const uint64_t run_index = runs.fetch_add(1);
  std::vector<ProfileEvent> run_events;
  ThreadPool* const pool = own_pool ? own_pool.get() : &global_thread_pool();
  const std::span<const Tensor> tensors(workspace.tensors);
  for (size_t i = 0; i < calls.size(); ++i) {
    const NodeCall& call = calls[i];
    const std::span<const Tensor> node_inputs = tensors.subspan(call.first, call.inputs);
    const std::span<const Tensor> node_outputs = tensors.subspan(call.first + call.inputs, call.outputs);
    const Clock::time_point start = options.profile ? Clock::now() : Clock::time_point();
    try {
      KernelContext context{pool, &constant_cache, call.constant_inputs};
      context.device = options.device;
      context.precision = options.precision;
      if (call.shaped_by_run) {
        run_shaped_by_run(i, context, workspace);
      } else if (!call.aliases) {  // an aliasing node's output is its input's memory already
        (*call.kernel)(context, node_inputs, node_outputs, attrs_of(i, *plan));
      }
      if (backend) backend->check_kernel(resolved.nodes[i].node->op_type);
    } catch (...) {
      rethrow_in_node(*resolved.nodes[i].node);
    }
    if (options.profile) {
      const auto micros = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
      run_events.push_back({i, run_index, thread_number(), micros(start - epoch), micros(Clock::now() - start),
                            metas_str(node_inputs) + " -> " + metas_str(node_outputs)});
    }
  }
  if (options.profile) {
    std::lock_guard<std::mutex> lock(profile_mutex);
    events.insert(events.end(), run_events.begin(), run_events.end());
  }

  // Node outputs that are graph outputs were allocated for the caller; an
  // output that is a graph input, a constant or given twice is copied.
  std::vector<Tensor> outputs;
  outputs.reserve(resolved.outputs.size());
  for (auto id = resolved.outputs.begin(); id != resolved.outputs.end(); ++id) {
    const bool fresh = resolved.defined_by_node(*id) && plan->arena_offsets[*id] == kNotInArena &&
                       std::find(resolved.outputs.begin(), id, *id) == id;
    outputs.push_back(fresh ? workspace.values[*id] : workspace.values[*id].clone());
  }
  if (backend) backend->synchronize(options.device.index);
  return outputs;
}

// Runs node i, whose outputs are shaped by the run: their shapes inferred
// from the inputs this run gives the node and allocated (at their largest
// for an op with data-dependent shapes, cut to what its kernel reports), then
// bound where later nodes and the caller read them.
void Session::Impl::run_shaped_by_run(size_t i, const KernelContext& context, Workspace& workspace) const {
  const ResolvedNode& node = resolved.nodes[i];
  const NodeCall& call = calls[i];
  const std::span<Tensor> node_tensors(workspace.tensors.data() + call.first, call.inputs + call.outputs);
  std::vector<const TensorMeta*> input_metas;
  for (const Tensor& input : node_tensors.first(call.inputs)) {
    input_metas.push_back(input.defined() ? &input.meta() : nullptr);
  }
  std::vector<TensorMeta> output_metas = node.op->shape_fn(input_metas, attrs_of(i, *workspace.plan));
  OPGRAPH_CHECK(output_metas.size() == call.outputs, "the shape function returned ", output_metas.size(),
                " outputs for this run's inputs (", metas_str(node_tensors.first(call.inputs)), "), the node names ",
                call.outputs);
  const std::span<Tensor> outputs = node_tensors.last(call.outputs);
  for (size_t k = 0; k < call.outputs; ++k) outputs[k] = Tensor::empty(output_metas[k], options.device);
  std::vector<Shape> shapes(node.op->data_dependent_shapes ? call.outputs : 0, unreported_shape());
  KernelContext with_shapes = context;
  with_shapes.output_shapes = shapes;
  (*call.kernel)(with_shapes, node_tensors.first(call.inputs), outputs, attrs_of(i, *workspace.plan));
  for (size_t k = 0; k < call.outputs; ++k) {
    Tensor output = shapes.empty() ? outputs[k] : data_dependent_output(outputs[k], shapes[k]);
    const RunBinding& binding = bindings[binding_of[node.outputs[k]]];
    for (size_t slot : binding.slots) workspace.tensors[slot] = output;
    workspace.values[binding.value] = std::move(output);
  }
}

std::vector<Tensor> Session::Impl::run_by_name(std::span<const std::pair<std::string, Tensor>> inputs) {
  std::vector<Tensor> ordered(graph.inputs.size());
  for (const auto& [given_name, tensor] : inputs) {
    const std::string& name = given_name;  // clang with OpenMP cannot capture a binding
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](const ValueInfo& input) { return input.name == name; });
    OPGRAPH_CHECK(it != graph.inputs.end(), "no input named '", name,
                  "'; the graph's inputs are: ", names_of(graph.inputs));
    Tensor& slot = ordered[static_cast<size_t>(it - graph.inputs.begin())];
    OPGRAPH_CHECK(!slot.defined(), "input '", name, "' is given twice");
    slot = tensor;
  }
  for (size_t k = 0; k < ordered.size(); ++k) {
    OPGRAPH_CHECK(ordered[k].defined(), "input '", graph.inputs[k].name,
                  "' is missing; the graph's inputs are: ", names_of(graph.inputs));
  }
  return run(ordered);
}

namespace {

// The package search path of a session loaded from a file: the given paths,
// then the file's folder.
std::vector<std::string> search_paths_for(const std::string& path, const SessionOptions& options) {
  std::vector<std::string> paths = options.package_paths;
  paths.push_back(std::filesystem::absolute(path).parent_path().string());
  return paths;
}

}  // namespace

Session::Session(const std::string& path, SessionOptions options) {
  OpgFile opg = load_opg(path);
  try {
    impl_ = std::make_unique<Impl>(std::move(opg.graph), opg.weights, options, search_paths_for(path, options));
  } catch (const Error& e) {
    throw Error(detail::concat("'", path, "': ", e.what()));
  }
}

Session::Session(Graph graph, Weights weights, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), weights, options, options.package_paths)) {}

Session::~Session() = default;

const Graph& Session::graph() const { return impl_->graph; }
const std::vector<PassReport>& Session::pass_reports() const { return impl_->pass_reports; }
const std::vector<ValueInfo>& Session::inputs() const { return impl_->graph.inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->output_info; }

std::vector<Tensor> Session::run(std::span<const Tensor> inputs) const { return impl_->run(inputs); }

std::vector<Tensor> Session::run(const std::unordered_map<std::string, Tensor>& inputs) const {
  std::vector<std::pair<std::string, Tensor>> named(inputs.begin(), inputs.end());
  return impl_->run_by_name(named);
}

std::vector<Tensor> Session::run(std::span<const std::pair<std::string, Tensor>> inputs) const {
  return impl_->run_by_name(inputs);
}

size_t Session::planned_peak_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->plans_mutex);
  return impl_->last_plan ? impl_->last_plan->memory.peak_bytes : 0;
}

size_t Session::naive_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->plans_mutex);
  return impl_->last_plan ? impl_->last_plan->memory.naive_bytes : 0;
}

std::vector<ProfileEvent> Session::profile_events() const {
  std::lock_guard<std::mutex> lock(impl_->profile_mutex);
  return impl_->events;
}

void Session::clear_profile_events() const {
  std::lock_guard<std::mutex> lock(impl_->profile_mutex);
  impl_->events.clear();
}

void Session::write_chrome_trace(const std::string& path) const {
  opgraph::write_chrome_trace(path, impl_->graph, profile_events());
}

}  // namespace opgraph

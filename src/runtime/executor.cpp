#include "runtime/executor.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace opgraph {
namespace {

std::string names_of(std::span<const ValueInfo> values) {
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

Executor::Executor(const LoadedGraph& loaded, const ValuePlan& plan, const SessionOptions& options)
    : loaded_(loaded), resolved_(loaded.resolved), value_plan_(plan), options_(options) {
  for (size_t i = 0; i < resolved_.nodes.size(); ++i) {
    const ResolvedNode& node = resolved_.nodes[i];
    const bool by_run = !node.outputs.empty() && plan.shaped_by_run()[node.outputs[0]];
    calls_.push_back({loaded.kernels[i], &node.attrs, plan.first_slot(i), node.inputs.size(), node.outputs.size(),
                      loaded.states[i].get(), by_run, plan.aliases(i)});
  }
  written_into_state_.assign(resolved_.values.size(), false);
  for (size_t k = 0; k < plan.state_updates().size(); ++k) {
    if (plan.updates_in_place()[k]) written_into_state_[*plan.state_updates()[k]] = true;
  }
  if (resolved_.symbols.empty()) static_plan_ = plan_for({}, {});
  if (options.threads > 0) own_pool_ = std::make_unique<ThreadPool>(options.threads);
  if (options.device.type != DeviceType::CPU) backend_ = &device_backend(options.device.type);
}

std::vector<int64_t> Executor::check_inputs(std::span<const Tensor> inputs, DimBindings& dims) const {
  std::unordered_map<std::string, std::string> bound_by;  // symbol -> the input that set it
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueInfo& declared = loaded_.graph.inputs[k];
    const std::string label = (k < loaded_.num_inputs ? "input '" : "state '") + declared.name + "'";
    const Tensor& given = inputs[k];
    OPGRAPH_CHECK(given.defined(), label, " is not given (an undefined tensor)");
    OPGRAPH_CHECK(given.device().type == DeviceType::CPU || given.device() == options_.device, label,
                  ": expected a tensor on ", input_devices(options_.device), ", got ", given.str(), " on ",
                  device_str(given.device()));
    auto mismatch = [&](const std::string& why) {
      return Error(detail::concat(label, ": expected ", declared.type_str(), ", got ", given.str(), why));
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
      if (first) bound_by[dim.symbol] = label;
      if (it->second != size) {
        throw mismatch(detail::concat(" (", dim.symbol, " is ", it->second, ", from ", bound_by[dim.symbol], ")"));
      }
    }
  }
  std::vector<int64_t> key;
  for (const std::string& symbol : resolved_.symbols) key.push_back(dims.at(symbol));
  return key;
}

std::shared_ptr<const ExecutionPlan> Executor::plan_for(const std::vector<int64_t>& key, const DimBindings& dims) {
  {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) return last_plan_ = it->second;
  }
  // Shape inference runs unlocked; a plan another run made meanwhile wins.
  std::shared_ptr<const ExecutionPlan> plan = value_plan_.make(dims);
  std::lock_guard<std::mutex> lock(plans_mutex_);
  return last_plan_ = plans_.emplace(key, std::move(plan)).first->second;
}

std::unique_ptr<Workspace> Executor::take_workspace(const std::shared_ptr<const ExecutionPlan>& plan) {
  std::unique_ptr<Workspace> workspace;
  {
    std::lock_guard<std::mutex> lock(workspaces_mutex_);
    if (!free_workspaces_.empty()) {
      workspace = std::move(free_workspaces_.back());
      free_workspaces_.pop_back();
    }
  }
  if (!workspace) workspace = std::make_unique<Workspace>();
  if (workspace->plan != plan) {
    workspace->plan = plan;
    fill_workspace(*workspace);
  }
  return workspace;
}

void Executor::fill_workspace(Workspace& workspace) const {
  const ExecutionPlan& plan = *workspace.plan;
  if (!workspace.arena.defined() || workspace.arena.nbytes() < plan.memory.peak_bytes) {
    workspace.arena = Tensor::empty({static_cast<int64_t>(plan.memory.peak_bytes)}, DType::UInt8, options_.device);
  }
  auto* arena = static_cast<uint8_t*>(workspace.arena.data());
  workspace.values.assign(resolved_.values.size(), Tensor());
  for (size_t k = 0; k < loaded_.constants.size(); ++k) workspace.values[resolved_.constants[k]] = loaded_.constants[k];
  for (const Lifetime& lifetime : value_plan_.lifetimes()) {
    const TensorMeta& meta = plan.metas[lifetime.value];
    workspace.values[lifetime.value] =
        Tensor::from_blob(arena + plan.arena_offsets[lifetime.value], meta.shape, {}, meta.dtype, {}, options_.device);
  }
  const std::vector<ValueId>& storage_of = value_plan_.storage_of();
  for (ValueId value = 0; value < storage_of.size(); ++value) {
    if (storage_of[value] != value)
      workspace.values[value] = workspace.values[storage_of[value]].view(plan.metas[value].shape);
  }
  workspace.tensors.clear();
  for (const ResolvedNode& node : resolved_.nodes) {
    for (const std::optional<ValueId>& id : node.inputs)
      workspace.tensors.push_back(id ? workspace.values[*id] : Tensor());
    for (ValueId id : node.outputs) workspace.tensors.push_back(workspace.values[id]);
  }
}

void Executor::return_workspace(std::unique_ptr<Workspace> workspace) {
  // The next run may take it on another thread's stream: the work this run
  // queued on its arena must be done first (a run that failed may have left
  // some; one that succeeded has waited already).
  if (backend_) {
    try {
      backend_->synchronize(options_.device.index);
    } catch (const Error&) {
      return;  // a device in error: drop the workspace rather than reuse its memory
    }
  }
  // The run's inputs and outputs belong to the caller: let them go.
  for (const RunBinding& binding : value_plan_.bindings()) {
    workspace->values[binding.value] = Tensor();
    for (size_t slot : binding.slots) workspace->tensors[slot] = Tensor();
  }
  std::lock_guard<std::mutex> lock(workspaces_mutex_);
  free_workspaces_.push_back(std::move(workspace));
}

std::vector<Tensor> Executor::run(std::span<const Tensor> given, std::span<const Tensor> states) {
  OPGRAPH_CHECK(given.size() == loaded_.num_inputs, "expected ", loaded_.num_inputs, " inputs (",
                names_of(std::span(loaded_.graph.inputs).first(loaded_.num_inputs)), "), got ", given.size());
  std::vector<Tensor> inputs(given.begin(), given.end());
  inputs.insert(inputs.end(), states.begin(), states.end());
  DimBindings dims;
  const std::vector<int64_t> key = check_inputs(inputs, dims);
  const std::shared_ptr<const ExecutionPlan> plan = static_plan_ ? static_plan_ : plan_for(key, dims);

  // The run's own workspace, handed back however the run ends.
  struct WorkspaceLease {
    Executor& executor;
    std::unique_ptr<Workspace> workspace;
    ~WorkspaceLease() { executor.return_workspace(std::move(workspace)); }
  } lease{*this, take_workspace(plan)};
  Workspace& workspace = *lease.workspace;

  auto bind = [&](const RunBinding& binding, Tensor tensor) {
    for (size_t slot : binding.slots) workspace.tensors[slot] = tensor;
    workspace.values[binding.value] = std::move(tensor);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    bind(value_plan_.input_binding(k), inputs[k].contiguous().to(options_.device));
  }
  for (const RunBinding& binding : value_plan_.bindings()) {
    if (resolved_.defined_by_node(binding.value) && !value_plan_.shaped_by_run()[binding.value] &&
        !written_into_state_[binding.value]) {
      const TensorMeta& meta = plan->metas[binding.value];
      bind(binding, backend_ ? Tensor::empty(meta, options_.device) : output_pool_->take(meta));
    }
  }
  for (size_t k = 0; k < states.size(); ++k) {
    if (value_plan_.updates_in_place()[k]) bind(value_plan_.binding_of(*value_plan_.state_updates()[k]), states[k]);
  }

  const uint64_t run_index = runs_.fetch_add(1);
  std::vector<ProfileEvent> run_events;
  ThreadPool* const pool = own_pool_ ? own_pool_.get() : &global_thread_pool();
  const std::span<const Tensor> tensors(workspace.tensors);
  for (size_t i = 0; i < calls_.size(); ++i) {
    const NodeCall& call = calls_[i];
    const std::span<const Tensor> node_inputs = tensors.subspan(call.first, call.inputs);
    const std::span<const Tensor> node_outputs = tensors.subspan(call.first + call.inputs, call.outputs);
    const Clock::time_point start = options_.profile ? Clock::now() : Clock::time_point();
    try {
      KernelContext context{pool};
      context.state = call.state;
      context.device = options_.device;
      if (call.shaped_by_run) {
        run_shaped_by_run(i, context, workspace);
      } else if (!call.aliases) {  // an aliasing node's output is its input's memory already
        (*call.kernel)(context, node_inputs, node_outputs, attrs_of(i, *plan));
      }
      if (backend_) backend_->check_kernel(resolved_.nodes[i].node->op_type);
    } catch (...) {
      rethrow_in_node(*resolved_.nodes[i].node);
    }
    if (options_.profile) {
      const auto micros = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
      run_events.push_back({i, run_index, thread_number(), micros(start - epoch_), micros(Clock::now() - start),
                            metas_str(node_inputs) + " -> " + metas_str(node_outputs)});
    }
  }
  if (options_.profile) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    events_.insert(events_.end(), run_events.begin(), run_events.end());
  }

  // Node outputs that are graph outputs were allocated for the caller; an
  // output that is a graph input, a constant or given twice is copied.
  // The states' updates follow the declared outputs; those not written in
  // place are copied into the states now that the run has succeeded.
  const auto declared_outputs = resolved_.outputs.begin() + static_cast<std::ptrdiff_t>(loaded_.num_outputs);
  std::vector<Tensor> outputs;
  outputs.reserve(loaded_.num_outputs);
  for (auto id = resolved_.outputs.begin(); id != declared_outputs; ++id) {
    const bool fresh = resolved_.defined_by_node(*id) && plan->arena_offsets[*id] == kNotInArena &&
                       std::find(resolved_.outputs.begin(), id, *id) == id;
    outputs.push_back(fresh ? workspace.values[*id] : workspace.values[*id].clone());
  }
  for (size_t k = 0; k < states.size(); ++k) {
    const std::optional<ValueId>& update = value_plan_.state_updates()[k];
    if (update && !value_plan_.updates_in_place()[k]) Tensor(states[k]).copy_(workspace.values[*update]);
  }
  if (backend_) backend_->synchronize(options_.device.index);
  return outputs;
}

// Runs node i, whose outputs are shaped by the run: their shapes inferred
// from the inputs this run gives the node and allocated (at their largest
// for an op with data-dependent shapes, cut to what its kernel reports), then
// bound where later nodes and the caller read them.
void Executor::run_shaped_by_run(size_t i, const KernelContext& context, Workspace& workspace) const {
  const ResolvedNode& node = resolved_.nodes[i];
  const NodeCall& call = calls_[i];
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
  for (size_t k = 0; k < call.outputs; ++k) outputs[k] = Tensor::empty(output_metas[k], options_.device);
  std::vector<Shape> shapes(node.op->data_dependent_shapes ? call.outputs : 0, unreported_shape());
  KernelContext with_shapes = context;
  with_shapes.output_shapes = shapes;
  (*call.kernel)(with_shapes, node_tensors.first(call.inputs), outputs, attrs_of(i, *workspace.plan));
  for (size_t k = 0; k < call.outputs; ++k) {
    Tensor output = shapes.empty() ? outputs[k] : data_dependent_output(outputs[k], shapes[k]);
    const RunBinding& binding = value_plan_.binding_of(node.outputs[k]);
    for (size_t slot : binding.slots) workspace.tensors[slot] = output;
    workspace.values[binding.value] = std::move(output);
  }
}

std::vector<Tensor> Executor::run(std::span<const std::pair<std::string, Tensor>> inputs,
                                  std::span<const Tensor> states) {
  const std::span<const ValueInfo> declared = std::span(loaded_.graph.inputs).first(loaded_.num_inputs);
  std::vector<Tensor> ordered(declared.size());
  for (const auto& [given_name, tensor] : inputs) {
    const std::string& name = given_name;  // clang with OpenMP cannot capture a binding
    auto it =
        std::find_if(declared.begin(), declared.end(), [&](const ValueInfo& input) { return input.name == name; });
    OPGRAPH_CHECK(it != declared.end(), "no input named '", name, "'; the graph's inputs are: ", names_of(declared));
    Tensor& slot = ordered[static_cast<size_t>(it - declared.begin())];
    OPGRAPH_CHECK(!slot.defined(), "input '", name, "' is given twice");
    slot = tensor;
  }
  for (size_t k = 0; k < ordered.size(); ++k) {
    OPGRAPH_CHECK(ordered[k].defined(), "input '", declared[k].name,
                  "' is missing; the graph's inputs are: ", names_of(declared));
  }
  return run(ordered, states);
}

size_t Executor::planned_peak_bytes() const {
  std::lock_guard<std::mutex> lock(plans_mutex_);
  return last_plan_ ? last_plan_->memory.peak_bytes : 0;
}

size_t Executor::naive_bytes() const {
  std::lock_guard<std::mutex> lock(plans_mutex_);
  return last_plan_ ? last_plan_->memory.naive_bytes : 0;
}

std::vector<ProfileEvent> Executor::profile_events() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  return events_;
}

void Executor::clear_profile_events() {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  events_.clear();
}

}  // namespace opgraph

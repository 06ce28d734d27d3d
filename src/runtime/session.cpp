#include "opgraph/runtime/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>

#include "graph/resolved.h"
#include "opgraph/core/thread_pool.h"
#include "opgraph/package/loader.h"
#include "opgraph/runtime/memory_plan.h"
#include "runtime/trace.h"

namespace opgraph {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kNotInArena = static_cast<size_t>(-1);

// What a run needs for one set of symbol sizes.
struct ExecutionPlan {
  std::vector<TensorMeta> metas;      // by ValueId
  std::vector<size_t> arena_offsets;  // by ValueId; kNotInArena for values with memory of their own
  MemoryPlan memory;
};

// An intermediate value: written by one node, read by later ones, and dead
// once the last of them has run. Only these live in the arena.
struct Lifetime {
  ValueId value;
  size_t first_use, last_use;  // node indices
};

std::string names_of(const std::vector<ValueInfo>& values) {
  std::string names;
  for (const ValueInfo& value : values) names += (names.empty() ? "" : ", ") + value.name;
  return names;
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
  std::vector<ValueInfo> output_info;
  std::vector<Tensor> constants;  // by position in graph.constants, contiguous
  std::vector<const KernelFn*> kernels;  // by node
  std::vector<Lifetime> lifetimes;
  std::unique_ptr<ThreadPool> own_pool;  // when options.threads asks for a count of its own
  Clock::time_point epoch = Clock::now();

  std::mutex plans_mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<const ExecutionPlan>> plans;  // by symbol sizes
  std::shared_ptr<const ExecutionPlan> last_plan;

  std::mutex arenas_mutex;
  std::vector<Tensor> free_arenas;  // uint8 buffers, one per run in flight at most

  std::atomic<uint64_t> runs{0};
  std::mutex profile_mutex;
  std::vector<ProfileEvent> events;

  Impl(Graph graph, const Weights& weights, SessionOptions options, const std::vector<std::string>& search_paths);
  std::vector<Tensor> run(std::span<const Tensor> inputs);
  std::vector<Tensor> run_by_name(std::span<const std::pair<std::string, Tensor>> inputs);

 private:
  void bind_constants(const Weights& weights);
  void resolve_kernels();
  void compute_lifetimes();
  std::vector<int64_t> check_inputs(std::span<const Tensor> inputs, DimBindings& dims) const;
  std::shared_ptr<const ExecutionPlan> plan_for(const std::vector<int64_t>& key, const DimBindings& dims);
  std::shared_ptr<const ExecutionPlan> make_plan(const DimBindings& dims) const;
  Tensor take_arena(size_t bytes);
  void return_arena(Tensor arena);
};

Session::Impl::Impl(Graph graph_in, const Weights& weights, SessionOptions options_in,
                    const std::vector<std::string>& search_paths)
    : graph(std::move(graph_in)), options(std::move(options_in)) {
  OPGRAPH_CHECK(options.threads >= 0, "SessionOptions::threads must be 0 (the global pool) or a count, got ",
                options.threads);
  load_packages(graph.packages, search_paths);
  resolved = resolve(graph, Registry::global());
  // Symbolic shape inference also checks every node's shapes (as verify() does).
  const std::vector<ValueInfo> types = infer_symbolic(graph, resolved);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    output_info.push_back(types[resolved.outputs[i]]);
    output_info.back().name = graph.outputs[i];
  }
  bind_constants(weights);
  resolve_kernels();
  compute_lifetimes();
  if (resolved.symbols.empty()) plan_for({}, {});
  if (options.threads > 0) own_pool = std::make_unique<ThreadPool>(options.threads);
}

void Session::Impl::bind_constants(const Weights& weights) {
  check_weights(graph, weights);
  for (const ValueInfo& constant : graph.constants) constants.push_back(weights.at(constant.name).contiguous());
}

void Session::Impl::resolve_kernels() {
  for (const ResolvedNode& node : resolved.nodes) {
    const KernelFn& kernel = node.op->kernels[static_cast<size_t>(DeviceType::CPU)];
    OPGRAPH_CHECK(static_cast<bool>(kernel), node_label(*node.node), ": the op has no cpu kernel");
    kernels.push_back(&kernel);
  }
}

void Session::Impl::compute_lifetimes() {
  std::vector<bool> graph_output(resolved.values.size(), false);
  for (ValueId id : resolved.outputs) graph_output[id] = true;
  std::vector<size_t> lifetime_of(resolved.values.size(), kNotInArena);
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    for (const std::optional<ValueId>& input : resolved.nodes[i].inputs) {
      if (input && lifetime_of[*input] != kNotInArena) lifetimes[lifetime_of[*input]].last_use = i;
    }
    for (ValueId output : resolved.nodes[i].outputs) {
      if (graph_output[output]) continue;  // returned to the caller: allocated on its own
      lifetime_of[output] = lifetimes.size();
      lifetimes.push_back({output, i, i});
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
    OPGRAPH_CHECK(given.device().type == DeviceType::CPU, "input '", declared.name, "': expected a cpu tensor, got ",
                  given.str(), " on ", device_str(given.device()));
    auto mismatch = [&](const std::string& why) {
      return Error(detail::concat("input '", declared.name, "': expected ", declared.type_str(), ", got ", given.str(),
                                  why));
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
  plan->metas = infer_metas(graph, resolved, dims);
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

Tensor Session::Impl::take_arena(size_t bytes) {
  Tensor arena;
  {
    std::lock_guard<std::mutex> lock(arenas_mutex);
    if (!free_arenas.empty()) {
      arena = std::move(free_arenas.back());
      free_arenas.pop_back();
    }
  }
  if (!arena.defined() || arena.nbytes() < bytes) arena = Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8);
  return arena;
}

void Session::Impl::return_arena(Tensor arena) {
  std::lock_guard<std::mutex> lock(arenas_mutex);
  free_arenas.push_back(std::move(arena));
}

std::vector<Tensor> Session::Impl::run(std::span<const Tensor> inputs) {
  DimBindings dims;
  const std::vector<int64_t> key = check_inputs(inputs, dims);
  const std::shared_ptr<const ExecutionPlan> plan = plan_for(key, dims);

  // The run's own arena, handed back however the run ends.
  struct ArenaLease {
    Impl& impl;
    Tensor arena;
    ~ArenaLease() { impl.return_arena(std::move(arena)); }
  } lease{*this, take_arena(plan->memory.peak_bytes)};
  auto* arena = static_cast<uint8_t*>(lease.arena.data());

  std::vector<Tensor> values(resolved.values.size());
  for (size_t k = 0; k < inputs.size(); ++k) values[resolved.inputs[k]] = inputs[k].contiguous();
  for (size_t k = 0; k < constants.size(); ++k) values[resolved.constants[k]] = constants[k];

  const uint64_t run_index = runs.fetch_add(1);
  std::vector<ProfileEvent> run_events;
  const KernelContext context{own_pool ? own_pool.get() : &global_thread_pool()};
  std::vector<Tensor> node_inputs, node_outputs;
  for (size_t i = 0; i < resolved.nodes.size(); ++i) {
    const ResolvedNode& node = resolved.nodes[i];
    node_inputs.clear();
    for (const std::optional<ValueId>& id : node.inputs) node_inputs.push_back(id ? values[*id] : Tensor());
    node_outputs.clear();
    for (ValueId id : node.outputs) {
      const TensorMeta& meta = plan->metas[id];
      const size_t offset = plan->arena_offsets[id];
      values[id] = offset == kNotInArena ? Tensor::empty(meta)
                                         : Tensor::from_blob(arena + offset, meta.shape, {}, meta.dtype);
      node_outputs.push_back(values[id]);
    }
    const Clock::time_point start = Clock::now();
    try {
      (*kernels[i])(context, node_inputs, node_outputs, node.attrs);
    } catch (...) {
      rethrow_in_node(*node.node);
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
  std::vector<bool> handed_out(resolved.values.size(), false);
  for (ValueId id : resolved.outputs) {
    const bool fresh = resolved.defined_by_node(id) && plan->arena_offsets[id] == kNotInArena;
    outputs.push_back(fresh && !handed_out[id] ? values[id] : values[id].clone());
    handed_out[id] = true;
  }
  return outputs;
}

std::vector<Tensor> Session::Impl::run_by_name(std::span<const std::pair<std::string, Tensor>> inputs) {
  std::vector<Tensor> ordered(graph.inputs.size());
  for (const auto& [given_name, tensor] : inputs) {
    const std::string& name = given_name;  // clang with OpenMP cannot capture a binding
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](const ValueInfo& input) { return input.name == name; });
    OPGRAPH_CHECK(it != graph.inputs.end(), "no input named '", name, "'; the graph's inputs are: ",
                  names_of(graph.inputs));
    Tensor& slot = ordered[static_cast<size_t>(it - graph.inputs.begin())];
    OPGRAPH_CHECK(!slot.defined(), "input '", name, "' is given twice");
    slot = tensor;
  }
  for (size_t k = 0; k < ordered.size(); ++k) {
    OPGRAPH_CHECK(ordered[k].defined(), "input '", graph.inputs[k].name, "' is missing; the graph's inputs are: ",
                  names_of(graph.inputs));
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

void Session::write_chrome_trace(const std::string& path) const {
  opgraph::write_chrome_trace(path, impl_->graph, profile_events());
}

}  // namespace opgraph

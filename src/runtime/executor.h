// A Session's runs: each checks its inputs against the graph's declared
// types, takes the ExecutionPlan of their symbol sizes (made once per set of
// sizes) and a workspace made for it, and calls the nodes' kernels in order.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "opgraph/core/device_backend.h"
#include "opgraph/core/thread_pool.h"
#include "runtime/load.h"
#include "runtime/output_pool.h"
#include "runtime/value_plan.h"

namespace opgraph {

// What one run works in, made for one plan and reused by the runs of that
// plan: the arena, and every value and every node's argument tensors
// already made over it, so that a run binds only its inputs and fresh
// outputs and then calls the kernels, with no allocation and no lookup.
// One per run in flight.
struct Workspace {
  std::shared_ptr<const ExecutionPlan> plan;
  Tensor arena;
  std::vector<Tensor> values;   // by ValueId
  std::vector<Tensor> tensors;  // the nodes' arguments, see ValuePlan::first_slot
};

class Executor {
 public:
  // `loaded` and `plan` must outlive the executor.
  Executor(const LoadedGraph& loaded, const ValuePlan& plan, const SessionOptions& options);

  // Inputs in graph order, or by name, and the buffers of the graph's
  // states (LoadedGraph::graph_states), which the run updates; see Session::run.
  std::vector<Tensor> run(std::span<const Tensor> inputs, std::span<const Tensor> states);
  std::vector<Tensor> run(std::span<const std::pair<std::string, Tensor>> inputs, std::span<const Tensor> states);

  // The most recent run's plan's arena size and no-reuse baseline.
  size_t planned_peak_bytes() const;
  size_t naive_bytes() const;

  std::vector<ProfileEvent> profile_events() const;
  void clear_profile_events();

 private:
  using Clock = std::chrono::steady_clock;

  // A node as a run calls it: its kernel, and where its inputs and outputs
  // sit in a workspace's tensors.
  struct NodeCall {
    const KernelFn* kernel;
    const Attrs* attrs;
    size_t first;  // inputs at [first, first + inputs), outputs after them
    size_t inputs, outputs;
    KernelState* state;  // what the kernel prepared for the node, if anything
    bool shaped_by_run;  // see ValuePlan::shaped_by_run
    bool aliases;        // see ValuePlan::aliases: nothing to run
  };

  const LoadedGraph& loaded_;
  const ResolvedGraph& resolved_;
  const ValuePlan& value_plan_;
  const SessionOptions& options_;
  std::vector<NodeCall> calls_;           // by node
  std::vector<bool> written_into_state_;  // by ValueId: see ValuePlan::updates_in_place
  std::shared_ptr<OutputPool> output_pool_ = std::make_shared<OutputPool>();  // the CPU outputs' buffers
  std::unique_ptr<ThreadPool> own_pool_;  // when options.threads asks for a count of its own
  DeviceBackend* backend_ = nullptr;      // options.device's, where it is not the CPU
  Clock::time_point epoch_ = Clock::now();

  mutable std::mutex plans_mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<const ExecutionPlan>> plans_;  // by symbol sizes
  std::shared_ptr<const ExecutionPlan> last_plan_;
  std::shared_ptr<const ExecutionPlan> static_plan_;  // the only plan of a graph without symbols

  std::mutex workspaces_mutex_;
  std::vector<std::unique_ptr<Workspace>> free_workspaces_;  // one per run in flight at most

  std::atomic<uint64_t> runs_{0};
  mutable std::mutex profile_mutex_;
  std::vector<ProfileEvent> events_;

  // `inputs` holds the declared inputs, then the states' buffers.
  std::vector<int64_t> check_inputs(std::span<const Tensor> inputs, DimBindings& dims) const;
  std::shared_ptr<const ExecutionPlan> plan_for(const std::vector<int64_t>& key, const DimBindings& dims);
  std::unique_ptr<Workspace> take_workspace(const std::shared_ptr<const ExecutionPlan>& plan);
  void fill_workspace(Workspace& workspace) const;
  void return_workspace(std::unique_ptr<Workspace> workspace);
  void run_shaped_by_run(size_t i, const KernelContext& context, Workspace& workspace) const;
  // Node i's attributes in a run of `plan`: bound for its sizes where they are computed from symbols.
  const Attrs& attrs_of(size_t i, const ExecutionPlan& plan) const {
    return resolved_.nodes[i].symbolic_attrs ? plan.attrs[i] : *calls_[i].attrs;
  }
};

}  // namespace opgraph

// A Session's plan: where each value of a run lives. Made once at load from
// the graph alone: which values share memory (a reshape's output is its
// input's memory, an in-place op's output its input's), how long each
// intermediate value lives, and where a run binds its inputs and outputs in
// the tensors of a workspace. For each set of symbol sizes it then makes an
// ExecutionPlan: every value's type, and one arena that holds every
// intermediate value, reused between values whose lifetimes do not overlap.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "opgraph/runtime/memory_plan.h"
#include "runtime/load.h"

namespace opgraph {

inline constexpr size_t kNotInArena = static_cast<size_t>(-1);

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

// A value that each run binds anew (a graph input, or a node output handed
// to the caller), and the places in a workspace's tensors that hold it.
struct RunBinding {
  ValueId value;
  std::vector<size_t> slots;
};

class ValuePlan {
 public:
  explicit ValuePlan(const LoadedGraph& loaded);

  // By ValueId: the value's shape is known only in a run, as it comes from an
  // op with data-dependent shapes (aten::nonzero) or from a node that reads
  // such a value. Those values are not planned: the node that makes them
  // infers their shapes from its inputs of that run (for an op with
  // data-dependent shapes, their largest shapes), allocates them and binds
  // them once it ran. The rest of the graph is planned as if they were not
  // there, so a graph without such ops is planned and run as it would be
  // without this.
  const std::vector<bool>& shaped_by_run() const { return shaped_by_run_; }
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
  const std::vector<ValueId>& storage_of() const { return storage_of_; }
  const std::vector<Lifetime>& lifetimes() const { return lifetimes_; }
  // Whether node i's output is its input's memory, reshaped: it runs nothing.
  bool aliases(size_t node) const;

  // A workspace holds every node's arguments in one vector: node i's inputs
  // at [first_slot(i), first_slot(i) + inputs), its outputs after them.
  size_t first_slot(size_t node) const { return first_slot_[node]; }
  size_t num_slots() const { return num_slots_; }
  const std::vector<RunBinding>& bindings() const { return bindings_; }
  // The binding of graph input k, and of a value that has one.
  const RunBinding& input_binding(size_t k) const { return bindings_[input_bindings_[k]]; }
  const RunBinding& binding_of(ValueId value) const { return bindings_[binding_of_[value]]; }

  // By state (LoadedGraph::graph_states): its update's value, or nullopt for
  // a state without; and whether the node that computes the update writes it
  // straight into the state's buffer. That is so where nothing reads the
  // state after that node, but the node itself through the input its op may
  // write over (OpDef::in_place_input), and the update is nothing else the
  // caller gets. A run binds the state's buffer as the update's memory then,
  // and otherwise copies the update into the state when it ends.
  const std::vector<std::optional<ValueId>>& state_updates() const { return state_updates_; }
  const std::vector<bool>& updates_in_place() const { return updates_in_place_; }

  // Every value's type and arena offset for one run's symbol sizes.
  std::shared_ptr<const ExecutionPlan> make(const DimBindings& dims) const;

 private:
  const LoadedGraph& loaded_;
  const ResolvedGraph& resolved_;
  std::vector<bool> shaped_by_run_;
  std::vector<ValueId> storage_of_;
  std::vector<Lifetime> lifetimes_;
  std::vector<size_t> first_slot_;
  size_t num_slots_ = 0;
  std::vector<RunBinding> bindings_;
  std::vector<size_t> input_bindings_;  // into bindings_, by graph input
  std::vector<size_t> binding_of_;      // by ValueId: index into bindings_, or -1 for none
  std::vector<std::optional<ValueId>> state_updates_;
  std::vector<bool> updates_in_place_;

  void find_shaped_by_run();
  std::vector<bool> allocated_apart() const;
  void find_aliases();
  void find_in_place_outputs(const std::vector<bool>& apart);
  void compute_lifetimes();
  void find_run_bindings();
  void find_state_updates();
  bool writable_into_state(ValueId state, ValueId update) const;
};

}  // namespace opgraph

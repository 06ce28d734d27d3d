#include "runtime/value_plan.h"

#include <algorithm>
#include <numeric>

namespace opgraph {

ValuePlan::ValuePlan(const LoadedGraph& loaded) : loaded_(loaded), resolved_(loaded.resolved) {
  find_shaped_by_run();
  find_aliases();
  compute_lifetimes();
  for (const ResolvedNode& node : resolved_.nodes) {
    first_slot_.push_back(num_slots_);
    num_slots_ += node.inputs.size() + node.outputs.size();
  }
  find_run_bindings();
  find_state_updates();
}

bool ValuePlan::aliases(size_t i) const {
  const ResolvedNode& node = resolved_.nodes[i];
  return node.op->reshapes_input && node.outputs.size() == 1 && storage_of_[node.outputs[0]] != node.outputs[0];
}

void ValuePlan::find_shaped_by_run() {
  shaped_by_run_.assign(resolved_.values.size(), false);
  for (const ResolvedNode& node : resolved_.nodes) {
    bool by_run = node.op->data_dependent_shapes;
    for (const std::optional<ValueId>& input : node.inputs) by_run = by_run || (input && shaped_by_run_[*input]);
    for (ValueId output : node.outputs) shaped_by_run_[output] = by_run;
  }
}

// By ValueId: a node output returned to the caller or shaped by the run,
// which is allocated on its own rather than in the arena.
std::vector<bool> ValuePlan::allocated_apart() const {
  std::vector<bool> apart = shaped_by_run_;
  for (ValueId id : resolved_.outputs) apart[id] = true;
  return apart;
}

void ValuePlan::find_aliases() {
  const std::vector<bool> apart = allocated_apart();
  storage_of_.resize(resolved_.values.size());
  std::iota(storage_of_.begin(), storage_of_.end(), ValueId{0});
  for (const ResolvedNode& node : resolved_.nodes) {
    if (!node.op->reshapes_input || node.outputs.size() != 1 || node.inputs.empty() || !node.inputs[0]) continue;
    const ValueId root = storage_of_[*node.inputs[0]], output = node.outputs[0];
    const bool held = resolved_.is_constant(root) || (resolved_.defined_by_node(root) && !apart[root]);
    if (held && !apart[output]) storage_of_[output] = root;
  }
  find_in_place_outputs(apart);
}

void ValuePlan::find_in_place_outputs(const std::vector<bool>& apart) {
  // By ValueId of a storage: the last node that reads any value it holds.
  std::vector<size_t> last_read(resolved_.values.size(), 0);
  for (size_t i = 0; i < resolved_.nodes.size(); ++i) {
    for (const std::optional<ValueId>& input : resolved_.nodes[i].inputs) {
      if (input) last_read[storage_of_[*input]] = i;
    }
  }
  for (size_t i = 0; i < resolved_.nodes.size(); ++i) {
    const ResolvedNode& node = resolved_.nodes[i];
    const std::optional<size_t> k = node.op->in_place_input;
    if (!k || node.outputs.size() != 1 || *k >= node.inputs.size() || !node.inputs[*k]) continue;
    const ValueId root = storage_of_[*node.inputs[*k]], output = node.outputs[0];
    // No later node may read the input, nor this one through another argument.
    bool read_elsewhere = false;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      read_elsewhere = read_elsewhere || (j != *k && node.inputs[j] && storage_of_[*node.inputs[j]] == root);
    }
    const bool overwritable =
        resolved_.defined_by_node(root) && !apart[root] && last_read[root] == i && !read_elsewhere;
    if (!overwritable || apart[output] || storage_of_[output] != output) continue;
    // The output and the values that reshape it move into the input's memory.
    for (ValueId& storage : storage_of_) {
      if (storage == output) storage = root;
    }
    last_read[root] = std::max(last_read[root], last_read[output]);
  }
}

void ValuePlan::compute_lifetimes() {
  const std::vector<bool> apart = allocated_apart();
  std::vector<size_t> lifetime_of(resolved_.values.size(), kNotInArena);
  for (size_t i = 0; i < resolved_.nodes.size(); ++i) {
    for (const std::optional<ValueId>& input : resolved_.nodes[i].inputs) {
      if (input && lifetime_of[*input] != kNotInArena) lifetimes_[lifetime_of[*input]].last_use = i;
    }
    for (ValueId output : resolved_.nodes[i].outputs) {
      // Held in its input's memory: reading it keeps that memory alive.
      if (storage_of_[output] != output) {
        lifetime_of[output] = lifetime_of[storage_of_[output]];
        continue;
      }
      if (apart[output]) continue;
      lifetime_of[output] = lifetimes_.size();
      lifetimes_.push_back({output, i, i});
    }
  }
}

// Graph inputs and the node outputs returned to the caller change from run to
// run; constants and the values in the arena stay where the workspace put them.
void ValuePlan::find_run_bindings() {
  std::vector<bool> in_arena(resolved_.values.size(), false);
  for (const Lifetime& lifetime : lifetimes_) in_arena[lifetime.value] = true;
  constexpr size_t kUnbound = static_cast<size_t>(-1);
  binding_of_.assign(resolved_.values.size(), kUnbound);
  auto slots_of = [&](ValueId value) -> std::vector<size_t>* {
    const bool per_run = value < resolved_.inputs.size() ||
                         (resolved_.defined_by_node(value) && !in_arena[value] && storage_of_[value] == value);
    if (!per_run) return nullptr;
    if (binding_of_[value] == kUnbound) {
      binding_of_[value] = bindings_.size();
      bindings_.push_back({value, {}});
    }
    return &bindings_[binding_of_[value]].slots;
  };
  for (ValueId input : resolved_.inputs) {
    slots_of(input);
    input_bindings_.push_back(binding_of_[input]);
  }
  for (size_t i = 0; i < resolved_.nodes.size(); ++i) {
    const ResolvedNode& node = resolved_.nodes[i];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!node.inputs[k]) continue;
      if (std::vector<size_t>* slots = slots_of(*node.inputs[k])) slots->push_back(first_slot_[i] + k);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (std::vector<size_t>* slots = slots_of(node.outputs[k]))
        slots->push_back(first_slot_[i] + node.inputs.size() + k);
    }
  }
}

void ValuePlan::find_state_updates() {
  size_t next_update = loaded_.num_outputs;
  for (size_t k = 0; k < loaded_.graph_states.size(); ++k) {
    const ValueId state = resolved_.inputs[loaded_.num_inputs + k];
    if (loaded_.graph_states[k].update.empty()) {
      state_updates_.emplace_back();
      updates_in_place_.push_back(false);
      continue;
    }
    const ValueId update = resolved_.outputs[next_update++];
    state_updates_.emplace_back(update);
    updates_in_place_.push_back(writable_into_state(state, update));
  }
}

bool ValuePlan::writable_into_state(ValueId state, ValueId update) const {
  const auto& outputs = resolved_.outputs;
  if (!resolved_.defined_by_node(update) || shaped_by_run_[update] || storage_of_[update] != update ||
      std::count(outputs.begin(), outputs.end(), update) != 1 ||
      std::find(outputs.begin(), outputs.end(), state) != outputs.end()) {
    return false;
  }
  const auto producer = std::find_if(resolved_.nodes.begin(), resolved_.nodes.end(), [&](const ResolvedNode& node) {
    return !node.outputs.empty() && node.outputs[0] == update;
  });
  if (producer == resolved_.nodes.end()) return false;  // the update is another output of its node
  const size_t written_at = static_cast<size_t>(producer - resolved_.nodes.begin());
  for (size_t i = written_at; i < resolved_.nodes.size(); ++i) {
    const ResolvedNode& node = resolved_.nodes[i];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const bool overwritten_here = i == written_at && node.op->in_place_input == k && node.outputs.size() == 1;
      if (node.inputs[k] == state && !overwritten_here) return false;
    }
  }
  return true;
}

std::shared_ptr<const ExecutionPlan> ValuePlan::make(const DimBindings& dims) const {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->metas = infer_metas(loaded_.graph, resolved_, dims, &plan->attrs);
  std::vector<BufferRequest> requests;
  for (const Lifetime& lifetime : lifetimes_) {
    requests.push_back({plan->metas[lifetime.value].nbytes(), lifetime.first_use, lifetime.last_use});
  }
  plan->memory = plan_memory(requests);
#ifndef NDEBUG
  verify_memory_plan(requests, plan->memory);
#endif
  plan->arena_offsets.assign(resolved_.values.size(), kNotInArena);
  for (size_t i = 0; i < lifetimes_.size(); ++i) plan->arena_offsets[lifetimes_[i].value] = plan->memory.offsets[i];
  for (const ResolvedNode& node : resolved_.nodes) {
    if (node.outputs.size() != 1 || storage_of_[node.outputs[0]] == node.outputs[0]) continue;
    const TensorMeta &output = plan->metas[node.outputs[0]], &held = plan->metas[storage_of_[node.outputs[0]]];
    OPGRAPH_CHECK(output.dtype == held.dtype && output.numel() == held.numel(), node_label(*node.node),
                  ": its op is defined to ", node.op->reshapes_input ? "reshape its input" : "write over an input",
                  ", but its output ", output.str(), " does not hold the elements of that input's ", held.str());
  }
  return plan;
}

}  // namespace opgraph

#include "opgraph/runtime/session.h"

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "runtime/executor.h"
#include "runtime/load.h"
#include "runtime/trace.h"
#include "runtime/value_plan.h"

namespace opgraph {

struct State::Impl {
  uint64_t session;  // Session::Impl::id of the session that made it
  std::vector<ValueInfo> values;
  std::vector<Tensor> buffers;
  std::vector<Tensor> initials;  // undefined: zeros
  std::atomic<bool> in_use{false};
};

namespace {

// Numbers sessions, so that a state names the one that made it even after
// that one is gone.
uint64_t next_session_id() {
  static std::atomic<uint64_t> next{0};
  return next++;
}

// A state taken by one run, handed back however the run ends.
class StateLease {
 public:
  StateLease() = default;
  explicit StateLease(State::Impl* state) : state_(state) {
    OPGRAPH_CHECK(!state_->in_use.exchange(true),
                  "the state is in use by another run; each sequence or stream "
                  "running at once needs a state of its own (Session::new_state)");
  }
  StateLease(const StateLease&) = delete;
  StateLease& operator=(const StateLease&) = delete;
  ~StateLease() {
    if (state_) state_->in_use = false;
  }
  std::span<const Tensor> buffers() const {
    return state_ ? std::span<const Tensor>(state_->buffers) : std::span<const Tensor>();
  }

 private:
  State::Impl* state_ = nullptr;
};

std::string state_names(const std::vector<StateInfo>& states) {
  std::string names;
  for (const StateInfo& state : states) names += (names.empty() ? "" : ", ") + state.value.name;
  return names;
}

}  // namespace

// A Session in its three parts: the graph as loaded, the plan of its values
// and the runs, each made from those before it.
struct Session::Impl {
  uint64_t id = next_session_id();
  SessionOptions options;
  std::unique_ptr<const LoadedGraph> loaded;
  ValuePlan plan;
  Executor executor;
  // The declared inputs, and the outputs' types as inferred ("?" for a
  // dimension the run shapes): without the states and their updates.
  std::vector<ValueInfo> input_info;
  std::vector<ValueInfo> output_info;

  Impl(Graph graph, Weights weights, SessionOptions options_in, const std::vector<std::string>& search_paths)
      : options(std::move(options_in)),
        loaded(load_graph(std::move(graph), std::move(weights), options, search_paths)),
        plan(*loaded),
        executor(*loaded, plan, options) {
    const ResolvedGraph& resolved = loaded->resolved;
    for (size_t i = 0; i < resolved.outputs.size(); ++i) {
      output_info.push_back(loaded->types[resolved.outputs[i]]);
      output_info.back().name = loaded->graph.outputs[i];
      if (plan.shaped_by_run()[resolved.outputs[i]]) std::ranges::fill(output_info.back().shape, Dim("?"));
    }
    // The states' updates follow the declared outputs, and the states the inputs.
    output_info.resize(loaded->num_outputs);
    input_info.assign(loaded->graph.inputs.begin(),
                      loaded->graph.inputs.begin() + static_cast<std::ptrdiff_t>(loaded->num_inputs));
  }

  StateLease lease(State* state) const {
    const std::vector<StateInfo>& states = loaded->graph_states;
    if (states.empty()) {
      OPGRAPH_CHECK(state == nullptr || !state->defined(), "graph '", loaded->graph.name,
                    "' has no state; run it without one");
      return {};
    }
    OPGRAPH_CHECK(state != nullptr && state->defined(), "graph '", loaded->graph.name, "' has state (",
                  state_names(states), "): run it with a state from this Session's new_state()");
    OPGRAPH_CHECK(state->impl_->session == id,
                  "the state was made by another Session; a state runs only with the "
                  "Session whose new_state() made it");
    return StateLease(state->impl_.get());
  }
};

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

const Graph& Session::graph() const { return impl_->loaded->graph; }
const std::vector<PassReport>& Session::pass_reports() const { return impl_->loaded->pass_reports; }
std::vector<std::string> Session::node_engines() const {
  std::vector<std::string> engines;
  for (const std::unique_ptr<KernelState>& state : impl_->loaded->states)
    engines.push_back(state ? state->describe() : "");
  return engines;
}
const std::vector<ValueInfo>& Session::inputs() const { return impl_->input_info; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->output_info; }

std::vector<Tensor> Session::run(std::span<const Tensor> inputs, State* state) const {
  const StateLease lease = impl_->lease(state);
  return impl_->executor.run(inputs, lease.buffers());
}

std::vector<Tensor> Session::run(const std::unordered_map<std::string, Tensor>& inputs, State* state) const {
  std::vector<std::pair<std::string, Tensor>> named(inputs.begin(), inputs.end());
  return run(std::span<const std::pair<std::string, Tensor>>(named), state);
}

std::vector<Tensor> Session::run(std::span<const std::pair<std::string, Tensor>> inputs, State* state) const {
  const StateLease lease = impl_->lease(state);
  return impl_->executor.run(inputs, lease.buffers());
}

const std::vector<StateInfo>& Session::states() const { return impl_->loaded->graph_states; }

State Session::new_state(const DimBindings& sizes) const {
  const std::vector<StateInfo>& states = impl_->loaded->graph_states;
  OPGRAPH_CHECK(!states.empty(), "graph '", impl_->loaded->graph.name, "' has no state");
  for (const auto& [symbol, size] : sizes) {
    const bool used = std::ranges::any_of(states, [&](const StateInfo& state) {
      return std::ranges::any_of(state.value.shape, [&](const Dim& dim) { return dim.symbol == symbol; });
    });
    OPGRAPH_CHECK(used, "new_state: no state's shape has dimension '", symbol, "'; the states are ",
                  state_names(states));
    OPGRAPH_CHECK(size >= 0, "new_state: dimension '", symbol, "' must not be negative, got ", size);
  }
  auto impl = std::make_shared<State::Impl>();
  impl->session = impl_->id;
  impl->initials = impl_->loaded->state_initials;
  for (const StateInfo& state : states) {
    ValueInfo value = state.value;
    for (Dim& dim : value.shape) {
      if (!dim.is_symbolic()) continue;
      auto size = sizes.find(dim.symbol);
      OPGRAPH_CHECK(size != sizes.end(), "new_state: state '", value.name, "' is ", value.type_str(),
                    ": give the size of '", dim.symbol, "'");
      dim = Dim(size->second);
    }
    impl->buffers.push_back(Tensor::empty(static_shape(value.shape), value.dtype, impl_->options.device));
    impl->values.push_back(std::move(value));
  }
  State made(std::move(impl));
  made.reset();
  return made;
}

void State::reset() {
  OPGRAPH_CHECK(impl_ != nullptr, "State::reset: the state holds no buffers (made by new_state())");
  OPGRAPH_CHECK(!impl_->in_use, "State::reset: the state is in use by a run");
  for (size_t k = 0; k < impl_->buffers.size(); ++k) {
    Tensor& buffer = impl_->buffers[k];
    const Tensor& initial = impl_->initials[k];
    buffer.copy_(initial.defined() ? initial : Tensor::zeros(buffer.shape(), buffer.dtype(), buffer.device()));
  }
}

Tensor State::get(std::string_view name) const {
  OPGRAPH_CHECK(impl_ != nullptr, "State::get: the state holds no buffers (made by new_state())");
  for (size_t k = 0; k < impl_->values.size(); ++k) {
    if (impl_->values[k].name == name) return impl_->buffers[k];
  }
  std::string names;
  for (const ValueInfo& value : impl_->values) names += (names.empty() ? "" : ", ") + value.name;
  throw Error(detail::concat("State::get: no state named '", name, "'; the states are ", names));
}

std::vector<ValueInfo> State::values() const { return impl_ ? impl_->values : std::vector<ValueInfo>{}; }

size_t Session::planned_peak_bytes() const { return impl_->executor.planned_peak_bytes(); }
size_t Session::naive_bytes() const { return impl_->executor.naive_bytes(); }

std::vector<ProfileEvent> Session::profile_events() const { return impl_->executor.profile_events(); }
void Session::clear_profile_events() const { impl_->executor.clear_profile_events(); }

void Session::write_chrome_trace(const std::string& path) const {
  opgraph::write_chrome_trace(path, impl_->loaded->graph, profile_events());
}

}  // namespace opgraph

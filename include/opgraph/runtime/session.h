// Session: a graph loaded to run, many times, from any number of threads.
//
// Loading does all the work that does not depend on the inputs' values:
// it loads the op packages the graph names, verifies the graph, resolves
// every node's op and CPU kernel, binds attributes, infers shapes and plans
// memory (intermediate tensors share one arena, reused between tensors whose
// lifetimes do not overlap). A run checks the inputs against the graph's
// declared types and calls the kernels directly, in node order.
//
// An op whose output sizes depend on the data (aten::nonzero) leaves the
// values it makes, and those computed from them, out of the plan: a run
// infers their shapes once the op has run, and allocates them then.
//
//   opgraph::Session session("model.opg", {.threads = 2});
//   std::vector<opgraph::Tensor> outputs = session.run({{"x", x}});
//
// A graph with state (Graph::states: a KV cache, a recurrent carry) runs
// with a state object, one per sequence or stream:
//
//   opgraph::State state = session.new_state();
//   session.run({{"input_ids", ids}, {"cache_position", position}}, &state);
#pragma once

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "opgraph/core/tensor.h"
#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"
#include "opgraph/runtime/passes.h"

namespace opgraph {

struct SessionOptions {
  // Intra-op threads for the kernels, the calling thread included. 0 uses
  // the process-wide pool (all cores unless set_num_threads() changed it).
  int threads = 0;
  // Where to find the packages the graph names: folders, or package files.
  // A package "mylib" is found as libmylib.so, mylib.so or mylib in a folder.
  std::vector<std::string> package_paths = {};
  // Record each node's wall time in each run (see write_chrome_trace).
  bool profile = false;
  // Rewrite the graph at load to run faster, outputs the same up to float
  // rounding: the passes of graph_passes() (runtime/passes.h) for the
  // session's device, but those named in disabled_passes. graph() and the
  // profile then show the rewritten graph, pass_reports() what each pass did.
  bool optimize = true;
  std::vector<std::string> disabled_passes = {};
  // Where the graph runs. On a GPU every node needs a kernel for it; the
  // weights are copied there at load, the memory plan is one device arena,
  // inputs on the host are copied in, outputs stay on the device, and the
  // kernels run in order on the calling thread's stream (device_backend.h).
  Device device = Device::cpu();
  // BFloat16: the products with a weight (linear layers, matrix products,
  // convolutions) round their operands to bfloat16 and sum in float32, about
  // twice as fast where the CPU multiplies bfloat16 in hardware (AVX-512 BF16,
  // AMX), which it must. Inputs, outputs and every other op stay float32, so
  // that the outputs differ from float32's by about bfloat16's rounding of
  // the products' operands (2^-9 relative). A product of up to 8 rows
  // (decoding steps) multiplies the bfloat16 weight by its float32 input,
  // unrounded.
  Precision precision = Precision::Float32;
  // {.bits = 8} or {.bits = 4, .group_size = 32}: the products with a
  // constant float32 weight of two dimensions (linear layers, the LM head,
  // matmul by a constant) keep it as int8 or int4 with float32 scales (and,
  // not .symmetric, zero points; WeightQuantization), quantized when the
  // product first runs: a quarter or an eighth of the bytes to stream in a
  // decoding step, widened to float32 in registers. Needs AVX2 or AVX-512
  // on the CPU. Quantized products take precedence over
  // Precision::BFloat16.
  WeightQuantization weights = {};
  // The engine the float32 products with a constant weight run on
  // (ProductEngine; node_engines() says which each node's took).
  ProductEngine products = ProductEngine::Auto;
};

// One node's execution in one run, in microseconds since the session loaded.
struct ProfileEvent {
  size_t node = 0;   // index into graph().nodes
  uint64_t run = 0;  // runs are numbered from 0 in the order they start
  int thread = 0;    // small number identifying the calling thread
  double start_us = 0;
  double duration_us = 0;
  std::string shapes;  // "float32[1, 3, 8, 8], float32[16, 3, 3, 3] -> float32[1, 16, 6, 6]"
};

// The buffers of a graph's states (see StateInfo) for one sequence or
// stream, made by Session::new_state() for that Session's runs. Copies refer
// to the same buffers. A state takes one run at a time; runs with different
// states may run at once, from any threads.
class State {
 public:
  State() = default;  // holds no buffers: a run of a graph with state refuses it

  // Every buffer back to its initial value (the state's `initial` constant, or zeros).
  void reset();
  // The buffer of state `name`, which later runs change in place.
  Tensor get(std::string_view name) const;
  // The states as the graph declares them, sized.
  std::vector<ValueInfo> values() const;
  bool defined() const { return impl_ != nullptr; }

  struct Impl;

 private:
  explicit State(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
  friend class Session;
};

class Session {
 public:
  // Loads an .opg file; the weights stay mapped from the file. The file's
  // folder is searched for packages after options.package_paths.
  explicit Session(const std::string& path, SessionOptions options = {});
  // Runs `graph` with `weights` (one tensor per constant). The weights are
  // read as they are at each node's first run: kernels may keep what they
  // derive from them (a convolution's weights in oneDNN's layout), so
  // changing their values afterwards takes a new Session.
  Session(Graph graph, Weights weights, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The graph as it runs (see SessionOptions::optimize).
  const Graph& graph() const;
  // What each pass of graph_passes() did at load; empty without optimize.
  const std::vector<PassReport>& pass_reports() const;
  // By node of graph(): the engines its products ran on so far and why
  // ("panels (up to 64 rows)"), empty for a node with no product or that
  // has not run yet.
  std::vector<std::string> node_engines() const;
  // The graph inputs as declared, and the outputs' types as inferred; a
  // dimension that depends on symbols other than as a plain symbol is "?",
  // as is every dimension of an output whose shape depends on the data.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;

  // Inputs in graph order, or by name; every input must be given. Each is
  // checked against its declared dtype and shape (symbols take their size
  // from the first input that has them). Returns newly allocated outputs in
  // graph order. Safe to call from several threads at once: each run has its
  // own arena, and gives the same results as a run alone. On a GPU a run
  // returns once its work on the stream is done. An output's memory is the
  // caller's until the caller lets go of it; the session then keeps it for a
  // later run's output of the same size (a few buffers at most).
  //
  // A graph with state needs `state`, one that new_state() of this Session
  // made and no other run is using: the run reads the states from it, and
  // when it succeeds leaves the states' updates in it. A run that fails
  // before any node has run leaves it as it was; see docs/opg-format.md for
  // the updates that are written in place while the run goes on.
  std::vector<Tensor> run(std::span<const Tensor> inputs, State* state = nullptr) const;
  std::vector<Tensor> run(const std::unordered_map<std::string, Tensor>& inputs, State* state = nullptr) const;
  std::vector<Tensor> run(std::span<const std::pair<std::string, Tensor>> inputs, State* state = nullptr) const;
  std::vector<Tensor> run(std::initializer_list<std::pair<std::string, Tensor>> inputs, State* state = nullptr) const {
    return run(std::span<const std::pair<std::string, Tensor>>(inputs.begin(), inputs.size()), state);
  }

  // The graph's states as it declares them (empty for a graph without).
  const std::vector<StateInfo>& states() const;
  // A new set of state buffers at their initial values, on the session's
  // device. `sizes` gives the symbols of the states' shapes that no constant
  // fixes (the batch, say); an unknown or missing one is an error.
  State new_state(const DimBindings& sizes = {}) const;

  // The arena size of the memory plan, and the baseline of one buffer per
  // intermediate tensor, for the most recent run's input shapes (for a graph
  // without symbolic dimensions, known from load on). Plans are cached per
  // set of symbol sizes.
  size_t planned_peak_bytes() const;
  size_t naive_bytes() const;

  // The events recorded so far (empty unless SessionOptions::profile).
  std::vector<ProfileEvent> profile_events() const;
  // Forgets them: the runs after this are recorded alone (after warm-up
  // runs, say, whose first one also packs weights and makes primitives).
  void clear_profile_events() const;
  // Writes them as Chrome trace-event JSON, which chrome://tracing and
  // Perfetto open: one complete ("X") event per node per run.
  void write_chrome_trace(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opgraph

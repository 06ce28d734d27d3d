#include "opgraph/runtime/session.h"

#include <algorithm>
#include <filesystem>

#include "runtime/executor.h"
#include "runtime/load.h"
#include "runtime/trace.h"
#include "runtime/value_plan.h"

namespace opgraph {

// A Session in its three parts: the graph as loaded, the plan of its values
// and the runs, each made from those before it.
struct Session::Impl {
  SessionOptions options;
  std::unique_ptr<const LoadedGraph> loaded;
  ValuePlan plan;
  Executor executor;
  // The outputs' types as inferred; "?" for a dimension the run shapes.
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
const std::vector<ValueInfo>& Session::inputs() const { return impl_->loaded->graph.inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->output_info; }

std::vector<Tensor> Session::run(std::span<const Tensor> inputs) const { return impl_->executor.run(inputs); }

std::vector<Tensor> Session::run(const std::unordered_map<std::string, Tensor>& inputs) const {
  std::vector<std::pair<std::string, Tensor>> named(inputs.begin(), inputs.end());
  return impl_->executor.run(std::span<const std::pair<std::string, Tensor>>(named));
}

std::vector<Tensor> Session::run(std::span<const std::pair<std::string, Tensor>> inputs) const {
  return impl_->executor.run(inputs);
}

size_t Session::planned_peak_bytes() const { return impl_->executor.planned_peak_bytes(); }
size_t Session::naive_bytes() const { return impl_->executor.naive_bytes(); }

std::vector<ProfileEvent> Session::profile_events() const { return impl_->executor.profile_events(); }
void Session::clear_profile_events() const { impl_->executor.clear_profile_events(); }

void Session::write_chrome_trace(const std::string& path) const {
  opgraph::write_chrome_trace(path, impl_->loaded->graph, profile_events());
}

}  // namespace opgraph

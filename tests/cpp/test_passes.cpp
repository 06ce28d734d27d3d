// The pass list: what each pass reports, turning passes off by name, how
// often a load infers the graph's types, and how a pass looks up the ops it
// names.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/passes/pass.h"
#include "graphs.h"
#include "kernels/builtin.h"
#include "opgraph/opgraph.h"
#include "runtime/pass_list.h"

namespace opgraph {
namespace {

using testing::small_cnn;
using testing::small_cnn_weights;

const PassReport& report_of(const std::vector<PassReport>& reports, const std::string& pass) {
  auto it = std::ranges::find(reports, pass, &PassReport::pass);
  EXPECT_NE(it, reports.end()) << pass;
  return *it;
}

std::vector<std::string> op_types(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node& node : graph.nodes) ops.push_back(node.op_type);
  return ops;
}

TEST(PassList, NamesEachPassOnceWithWhatItDoesAndWhere) {
  std::set<std::string> names;
  for (const PassInfo& pass : graph_passes()) {
    EXPECT_TRUE(names.insert(pass.name).second) << pass.name << " is listed twice";
    EXPECT_FALSE(pass.summary.empty()) << pass.name;
    EXPECT_FALSE(pass.devices.empty()) << pass.name;
  }
  EXPECT_GE(names.size(), 11u);
}

TEST(PassList, ReportsEveryPassAndWhatItRewrote) {
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  const std::vector<PassReport> reports = optimize(graph, weights);
  ASSERT_EQ(reports.size(), graph_passes().size());
  for (size_t i = 0; i < reports.size(); ++i) EXPECT_EQ(reports[i].pass, graph_passes()[i].name);
  // The relu after the convolution is the one thing any pass finds here.
  const PassReport& activations = report_of(reports, "fuse_activations");
  EXPECT_EQ(activations.rewritten, std::vector<std::string>{"conv: opgraph::conv2d"});
  EXPECT_EQ(activations.removed, 1u);
  for (const PassReport& report : reports) {
    EXPECT_FALSE(report.skipped) << report.pass;
    if (report.pass != "fuse_activations") {
      EXPECT_FALSE(report.changed()) << report.pass;
    }
  }
  EXPECT_EQ(op_types(graph), (std::vector<std::string>{"opgraph::conv2d", "aten::max_pool2d",
                                                       "aten::flatten.using_ints", "aten::linear"}));
}

TEST(PassList, LeavesOutTheDisabledPassesAndThoseForOtherDevices) {
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  const std::vector<PassReport> reports = optimize(graph, weights, {.disabled = {"fuse_activations"}});
  EXPECT_TRUE(report_of(reports, "fuse_activations").skipped);
  EXPECT_EQ(graph, small_cnn());

  // Every pass of the list is for the CPU alone.
  const std::vector<PassReport> on_gpu = optimize(graph, weights, {.device = {DeviceType::CUDA, 0}});
  EXPECT_TRUE(std::ranges::all_of(on_gpu, &PassReport::skipped));
  EXPECT_EQ(graph, small_cnn());
}

TEST(PassList, RefusesANameNoPassHas) {
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  try {
    optimize(graph, weights, {.disabled = {"fuse_activation"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no pass is named 'fuse_activation'; the passes are: "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("fuse_activations"), std::string::npos) << e.what();
  }
  EXPECT_EQ(graph, small_cnn());
  EXPECT_THROW(Session(small_cnn(), small_cnn_weights(), {.disabled_passes = {"nope"}}), Error);
}

// A load resolves the graph and infers its types once at the start, and again
// only after a pass that changed the graph, when the next pass reads them.
TEST(PassList, InfersOnceAtTheStartAndOnceAfterEachChange) {
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  PassContext context(graph, weights, Registry::global());
  context.resolved();
  const std::vector<PassReport> reports = run_passes(context, {});
  context.resolved();  // as the Session plans the rewritten graph
  const auto changed = std::ranges::count_if(reports, &PassReport::changed);
  EXPECT_EQ(changed, 1);
  EXPECT_EQ(context.inferences(), 1u + static_cast<size_t>(changed));

  // A graph no pass changes is inferred once.
  Graph chain = testing::relu_chain(3);
  Weights none;
  PassContext unchanged(chain, none, Registry::global());
  unchanged.resolved();
  run_passes(unchanged, {});
  unchanged.resolved();
  EXPECT_EQ(unchanged.inferences(), 1u);
}

TEST(PassList, SessionRunsTheSameWithAPassOff) {
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, 5);
  const Session all(small_cnn(), small_cnn_weights());
  const Session without(small_cnn(), small_cnn_weights(), {.disabled_passes = {"fuse_activations"}});
  EXPECT_EQ(report_of(all.pass_reports(), "fuse_activations").removed, 1u);
  EXPECT_TRUE(report_of(without.pass_reports(), "fuse_activations").skipped);
  EXPECT_EQ(without.graph().nodes.size(), small_cnn().nodes.size());
  const Tensor a = all.run({{"x", x}})[0], b = without.run({{"x", x}})[0];
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data_ptr<float>()[i], b.data_ptr<float>()[i], 1e-4) << i;
}

// A name the registry does not hold is an error where a pass looks it up,
// naming the pass and the name, not a comparison that never matches.
TEST(PassContext, LooksUpAnOpByNameAndRefusesAnUnknownOne) {
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  PassContext context(graph, weights, Registry::global());
  EXPECT_EQ(context.op("aten::relu"), &Registry::global().get("aten::relu"));
  EXPECT_EQ(context.op_of(graph.nodes[1]), context.op("aten::relu"));
  context.pass = "fuse_rms_norms";
  try {
    context.op("aten::mul.Tensr");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("graph pass fuse_rms_norms: unknown op 'aten::mul.Tensr'"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean: "), std::string::npos) << message;
    EXPECT_NE(message.find("aten::mul.Tensor"), std::string::npos) << message;
  }
}

// Each pass looks up the ops it names when it starts, whatever the graph
// holds: a pass whose op the registry lacks fails every load, naming it.
TEST(PassList, FailsAtThePassThatNamesAnOpTheRegistryLacks) {
  std::vector<OpDef> ops = kernels::builtin_ops();
  ASSERT_EQ(std::erase_if(ops, [](const OpDef& op) { return op.schema.qualified_name() == "aten::rsqrt"; }), 1u);
  Registry registry;
  registry.add(std::move(ops));
  Graph graph = small_cnn();
  Weights weights = small_cnn_weights();
  try {
    optimize(graph, weights, {}, registry);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("graph pass fuse_rms_norms: unknown op 'aten::rsqrt'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace opgraph

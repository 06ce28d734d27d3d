// The measured pick of an engine (kernels/cpu/engines/engine_pick.h): the
// fastest of the engines that take a call, found on its class's first call,
// run last on that call, kept in the process and in the cache file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/engines/engine_pick.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

// Trials that log their runs: "slow" waits a millisecond, "fast" does not,
// "declines" takes no call.
struct LoggedTrials {
  std::vector<std::string> log;
  std::vector<EngineTrial> trials{
      {"slow",
       [this] { return log.push_back("slow"), std::this_thread::sleep_for(std::chrono::milliseconds(1)), true; }},
      {"declines", [this] { return log.push_back("declines"), false; }},
      {"fast", [this] { return log.push_back("fast"), true; }}};
};

// A class no call of this process has met: a process may run a test more than once.
std::string new_class(const char* name) {
  static int made = 0;
  return name + std::string(" #") + std::to_string(++made);
}

std::string read(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(EnginePick, TimesTheEnginesThatTakeTheCallAndRunsTheFastestLast) {
  const std::string folder = testing::temp_path("engine_picks");
  ASSERT_EQ(::setenv("OPGRAPH_CACHE_DIR", folder.c_str(), 1), 0);
  const std::string shape_class = new_class("class A");
  LoggedTrials first;
  int restores = 0;
  const EnginePick pick = pick_engine(shape_class, first.trials, [&] { ++restores; });
  EXPECT_EQ(pick.trial, 2u);
  ASSERT_NE(pick.note, nullptr);
  // The slow trial's time is at least its millisecond's sleep, and more on a
  // loaded machine.
  const std::string times = "(slow ([0-9]+\\.[0-9]{3}) ms, fast [0-9]+\\.[0-9]{3} ms)";
  std::smatch note;
  const std::string note_text(pick.note);
  ASSERT_TRUE(std::regex_match(
      note_text, note,
      std::regex("fast \\(measured the fastest on this CPU for " + shape_class + ": " + times + "\\)")))
      << pick.note;
  EXPECT_GE(std::stod(note[2].str()), 1.0) << pick.note;
  // Each once to prepare, then each taker three times, timed; the pick ran
  // last, so it does not run again.
  EXPECT_EQ(first.log,
            (std::vector<std::string>{"slow", "declines", "fast", "slow", "fast", "slow", "fast", "slow", "fast"}));
  EXPECT_EQ(restores, 9);  // before every run

  // A later call of the class runs the pick alone, with the same note.
  LoggedTrials later;
  const EnginePick again = pick_engine(shape_class, later.trials, [] {});
  EXPECT_EQ(again.trial, 2u);
  EXPECT_EQ(std::string(again.note), std::string(pick.note));
  EXPECT_EQ(later.log, std::vector<std::string>{"fast"});

  const std::string file = engine_pick_file();
  EXPECT_TRUE(file.starts_with(folder + "/engines/")) << file;
  const std::string kept = read(file);
  // The class, the pick and the times the note gives, on one line.
  EXPECT_EQ(kept, shape_class + "\tfast\t" + note[1].str() + "\n");
  std::filesystem::remove_all(folder);
}

TEST(EnginePick, APickThatDeclinesLeavesTheCallToAnotherEngine) {
  const std::string folder = testing::temp_path("engine_picks_declined");
  ASSERT_EQ(::setenv("OPGRAPH_CACHE_DIR", folder.c_str(), 1), 0);
  std::filesystem::create_directories(std::filesystem::path(engine_pick_file()).parent_path());
  // Another process picked "declines" for the class (its call was laid out otherwise).
  const std::string shape_class = new_class("class B");
  std::ofstream(engine_pick_file()) << "a line that does not parse\n" << shape_class << "\tdeclines\tdeclines 0.1 ms\n";
  LoggedTrials trials;
  const EnginePick pick = pick_engine(shape_class, trials.trials, [] {});
  EXPECT_EQ(pick.trial, 0u);
  EXPECT_EQ(std::string(pick.note), "slow");
  EXPECT_EQ(trials.log, (std::vector<std::string>{"declines", "slow"}));
  std::filesystem::remove_all(folder);
}

TEST(EnginePick, NoEngineTakingTheCallRunsNothing) {
  const std::string folder = testing::temp_path("engine_picks_none");
  ASSERT_EQ(::setenv("OPGRAPH_CACHE_DIR", folder.c_str(), 1), 0);
  LoggedTrials trials;
  const std::vector<EngineTrial> decline{trials.trials[1]};
  const EnginePick pick = pick_engine(new_class("class C"), decline, [] {});
  EXPECT_EQ(pick.trial, 1u);
  EXPECT_EQ(pick.note, nullptr);
  EXPECT_FALSE(std::filesystem::exists(engine_pick_file()));
}

}  // namespace
}  // namespace opgraph::kernels

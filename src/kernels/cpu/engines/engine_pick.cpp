#include "kernels/cpu/engines/engine_pick.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/error.h"

namespace opgraph::kernels {
namespace {

// Timed runs per engine after the one that prepares it; the fastest counts,
// as the least disturbed by whatever else the machine ran. After
// kFewestRounds, a round of the engines that took longer than kLongRoundMs
// is the last: a disturbance weighs less on long runs, and an LM head's
// (GPT-2's took 110-190 ms an engine on one thread) would add seconds to the
// class's first call.
constexpr int kTimedRounds = 3, kFewestRounds = 2;
constexpr double kLongRoundMs = 50;

struct Picked {
  std::string engine;
  std::string note;  // what node_engines reports: stays put, as the map's nodes do
};

std::string picked_note(const std::string& shape_class, const std::string& engine, const std::string& timings) {
  return detail::concat(engine, " (measured the fastest on this CPU for ", shape_class, ": ", timings, ")");
}

// The picks of this process and of the files, by class. A file is read on
// the first use after $OPGRAPH_CACHE_DIR named it; a line that does not
// parse is skipped.
class PickTable {
 public:
  const Picked* find(const std::string& shape_class) {
    std::lock_guard lock(mutex_);
    load();
    const auto found = picks_.find(shape_class);
    return found == picks_.end() ? nullptr : &found->second;
  }

  // Keeps the pick of a class and appends it to the file, unless another
  // call kept one first: the kept one is returned.
  const Picked& keep(const std::string& shape_class, const std::string& engine, const std::string& timings) {
    std::lock_guard lock(mutex_);
    load();
    const auto [entry, inserted] =
        picks_.try_emplace(shape_class, Picked{engine, picked_note(shape_class, engine, timings)});
    if (inserted) append(detail::concat(shape_class, '\t', engine, '\t', timings, '\n'));
    return entry->second;
  }

 private:
  void load() {
    std::string path = engine_pick_file();
    if (path == loaded_) return;
    std::ifstream file(path);
    loaded_ = std::move(path);
    for (std::string line; std::getline(file, line);) {
      const size_t first_tab = line.find('\t'), second_tab = line.find('\t', first_tab + 1);
      if (first_tab == 0 || second_tab == std::string::npos || second_tab == first_tab + 1) continue;
      const std::string shape_class = line.substr(0, first_tab),
                        engine = line.substr(first_tab + 1, second_tab - first_tab - 1);
      picks_.try_emplace(shape_class, Picked{engine, picked_note(shape_class, engine, line.substr(second_tab + 1))});
    }
  }

  // One write of a whole line to a file opened for appending, so that
  // processes measuring at once add whole lines. A cache: where the folder
  // cannot be written, the picks stay in the process.
  static void append(const std::string& line) {
    const std::filesystem::path path = engine_pick_file();
    std::error_code ignored;
    std::filesystem::create_directories(path.parent_path(), ignored);
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
    ::close(fd);
  }

  std::mutex mutex_;
  std::string loaded_;  // the file read last
  std::map<std::string, Picked> picks_;
};

PickTable& pick_table() {
  static PickTable table;
  return table;
}

// The CPU model and the vector level the kernels run, as a file name.
std::string cpu_file_name() {
  std::string name;
  for (char c : cpu_model_name() + " " + cpu_capability_name(cpu_capability())) {
    const bool kept = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (kept) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  return name;
}

double milliseconds_of(const std::function<bool()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string engine_pick_file() {
  const char* folder = std::getenv("OPGRAPH_CACHE_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path cache = folder != nullptr && *folder != '\0' ? std::filesystem::path(folder)
                                      : home != nullptr ? std::filesystem::path(home) / ".cache" / "opgraph"
                                                        : std::filesystem::temp_directory_path() / "opgraph";
  static const std::string file_name = cpu_file_name() + ".tsv";
  return (cache / "engines" / file_name).string();
}

EnginePick pick_engine(const std::string& shape_class, std::span<const EngineTrial> trials,
                       const std::function<void()>& restore) {
  if (const Picked* known = pick_table().find(shape_class)) {
    for (size_t i = 0; i < trials.size(); ++i) {
      if (trials[i].engine == known->engine && trials[i].run()) return {i, known->note.c_str()};
    }
    for (size_t i = 0; i < trials.size(); ++i) {
      if (trials[i].engine != known->engine && trials[i].run()) return {i, trials[i].engine};
    }
    return {trials.size(), nullptr};
  }
  std::vector<size_t> takers;
  for (size_t i = 0; i < trials.size(); ++i) {
    restore();
    if (trials[i].run()) takers.push_back(i);
  }
  if (takers.empty()) return {trials.size(), nullptr};
  std::vector<double> fastest(trials.size(), std::numeric_limits<double>::infinity());
  for (int round = 0; round < kTimedRounds; ++round) {
    double round_ms = 0;
    for (size_t i : takers) {
      restore();
      const double ms = milliseconds_of(trials[i].run);
      fastest[i] = std::min(fastest[i], ms);
      round_ms += ms;
    }
    if (round + 1 >= kFewestRounds && round_ms > kLongRoundMs) break;
  }
  const size_t picked = *std::min_element(takers.begin(), takers.end(),
                                          [&](size_t left, size_t right) { return fastest[left] < fastest[right]; });
  if (picked != takers.back()) {
    restore();
    trials[picked].run();
  }
  std::string timings;
  for (size_t i : takers) {
    char time[32];
    std::snprintf(time, sizeof time, "%.3f ms", fastest[i]);
    timings += detail::concat(timings.empty() ? "" : ", ", trials[i].engine, " ", time);
  }
  const Picked& kept = pick_table().keep(shape_class, trials[picked].engine, timings);
  // Where another call kept its pick first, this call's outputs are still this one's pick's.
  return {picked, kept.engine == trials[picked].engine ? kept.note.c_str() : trials[picked].engine};
}

}  // namespace opgraph::kernels

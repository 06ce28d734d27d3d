// opgraph test-package: an op package's ops on the samples they declare,
// through the native checks (registry/conformance.h), as a pass/fail table
// per op; then, where the Python package sits beside this executable, the
// front-end suite (opgraph.testing) on the same package.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "commands.h"
#include "opgraph/package/loader.h"
#include "opgraph/registry/conformance.h"
#include "report.h"

namespace opgraph::cli {
namespace {

// "pass", "FAIL (n)", or "-" where the check did not apply.
std::string cell(int passed, int failed) {
  if (failed > 0) return "FAIL (" + std::to_string(failed) + ")";
  return passed > 0 ? "pass" : "-";
}

// Prints the table and the failures; returns how many checks failed.
int native_suite(const LoadedLibrary& library) {
  const std::vector<Check> checks = {Check::Reference, Check::Twice, Check::Threads, Check::Error};
  std::vector<TableRow> rows = {{"op", "samples", "reference", "twice", "threads", "errors"}};
  std::vector<std::string> failures;
  int failed_checks = 0;
  for (const std::string& name : library.ops) {
    const OpDef& op = Registry::global().get(name);
    std::map<Check, std::pair<int, int>> tally;  // passed, failed
    for (const CheckResult& result : check_samples(op)) {
      if (result.skipped) continue;
      auto& [passed, failed] = tally[result.check];
      if (result.failure.empty()) {
        ++passed;
      } else {
        ++failed;
        failures.push_back(name + ", " + check_name(result.check) + ", sample " + std::to_string(result.sample) + " (" +
                           sample_str(op.samples[result.sample]) + "): " + result.failure);
      }
    }
    TableRow row = {name, std::to_string(op.samples.size())};
    for (Check check : checks) {
      row.push_back(op.samples.empty() ? "no samples" : cell(tally[check].first, tally[check].second));
      failed_checks += tally[check].second;
    }
    if (op.samples.empty()) ++failed_checks;
    rows.push_back(std::move(row));
  }
  std::cout << "native checks (" << library.path << ")\n";
  print_table(std::cout, rows);
  for (const std::string& failure : failures) std::cout << "  FAIL " << failure << "\n";
  return failed_checks;
}

// The Python of the environment this executable was installed into, if it has one.
std::filesystem::path python_beside_me() {
  std::error_code ec;
  const std::filesystem::path me = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path python = me.parent_path() / "python";
  return !ec && std::filesystem::exists(python, ec) ? python : std::filesystem::path();
}

// Runs argv[0] with the arguments (no shell) and waits; true if it exits with 0.
bool run_process(std::vector<std::string> argv) {
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  const pid_t child = fork();
  OPGRAPH_CHECK(child >= 0, "cannot start ", argv[0]);
  if (child == 0) {
    execv(pointers[0], pointers.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int test_package_main(const Args& args) {
  const LoadedLibrary& library = load_library(args.operand());
  const int failed = native_suite(library);
  if (args.has("--native-only")) return failed == 0 ? 0 : 1;
  const std::filesystem::path python = python_beside_me();
  if (python.empty()) {
    std::cout << "\nfront ends: skipped: no Python environment beside this executable; run `python -m "
                 "opgraph.testing "
              << args.operand() << "` where opgraph is installed\n";
    return failed == 0 ? 0 : 1;
  }
  std::cout << "\n" << std::flush;
  const bool front_ends_passed =
      run_process({python.string(), "-m", "opgraph.testing", "--front-ends-only", library.path});
  return failed == 0 && front_ends_passed ? 0 : 1;
}

}  // namespace

Command test_package_command() {
  return {"test-package",
          "PACKAGE",
          "run an op package's ops on the samples they declare: native checks, then every front end",
          "The native checks hold each op's kernel to its reference implementation (where it has one), run it "
          "twice into the same outputs (the bits must agree) and from four threads at once, and check that every "
          "bad sample fails with its message. Then, where this executable belongs to a Python environment with "
          "opgraph, the front-end suite (python -m opgraph.testing) calls each op from NumPy, PyTorch (eager, "
          "opcheck, torch.compile, torch.export), a Graph and an .opg file. Exit status 1 if any check fails.",
          {{"--native-only", "", "run the native checks only"}},
          test_package_main};
}

}  // namespace opgraph::cli

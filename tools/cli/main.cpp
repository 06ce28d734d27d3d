// opgraph: run, benchmark, inspect and profile .opg models, and list the
// registered ops, from the command line.
//
// Every failure is one line on stderr, "opgraph <command>: <what is wrong>",
// and a non-zero exit status: 2 for a command line that does not follow the
// usage, 1 for anything else (a missing file, a bad model or input).
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "report.h"

namespace opgraph::cli {
namespace {

std::vector<Command> commands() {
  return {run_command(), bench_command(),   generate_command(), inspect_command(),
          ops_command(), profile_command(), quantize_command(), test_package_command()};
}

std::string command_names() {
  std::vector<std::string> names;
  for (const Command& command : commands()) names.push_back(command.name);
  return joined(names);
}

std::string tool_help() {
  std::string text =
      "usage: opgraph <command> [arguments]\n\n"
      "Runs graphs saved as .opg files with the opgraph runtime; no Python needed.\n\ncommands:\n";
  for (const Command& command : commands()) {
    text += "  " + command.name + std::string(14 - command.name.size(), ' ') + command.summary + "\n";
  }
  return text + "\n'opgraph <command> --help' describes a command and its flags.\n";
}

// One line, whatever the message holds.
int fail(const std::string& who, const std::string& message, int status) {
  std::string line = who + ": " + message;
  for (char& c : line) c = (c == '\n' || c == '\r') ? ' ' : c;
  std::cerr << line << std::endl;
  return status;
}

int run(const Command& command, std::span<char* const> argv) {
  const std::string who = "opgraph " + command.name;
  try {
    const Args args = Args::parse(command, argv);
    if (args.help()) {
      std::cout << help_text(command);
      return 0;
    }
    return command.main(args);
  } catch (const UsageError& e) {
    return fail(who, std::string(e.what()) + " (see 'opgraph " + command.name + " --help')", 2);
  } catch (const std::exception& e) {
    return fail(who, e.what(), 1);
  }
}

}  // namespace
}  // namespace opgraph::cli

int main(int argc, char** argv) {
  using namespace opgraph::cli;
  if (argc < 2)
    return fail("opgraph", "no command given; the commands are: " + command_names() + " (see 'opgraph --help')", 2);
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    std::cout << tool_help();
    return 0;
  }
  for (const Command& command : commands()) {
    if (command.name == name) return run(command, std::span<char* const>(argv + 2, argc - 2));
  }
  return fail("opgraph",
              "unknown command '" + name + "'; the commands are: " + command_names() + " (see 'opgraph --help')", 2);
}

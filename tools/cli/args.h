// Command-line parsing for the opgraph tool. Each command declares its flags;
// a command line is checked against them, so that a misspelt flag is an
// error rather than silently ignored.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "opgraph/core/error.h"

namespace opgraph::cli {

// A command line that does not follow the command's usage (exit status 2).
class UsageError : public Error {
 public:
  using Error::Error;
};

struct Flag {
  std::string name;   // "--input"
  std::string value;  // what it takes, for the help ("NAME=FILE"); empty for a switch
  std::string help;
  bool repeatable = false;
};

class Args;

struct Command {
  std::string name;     // "run"
  std::string operand;  // its positional arguments, a word each ("model.opg"), or empty for none
  std::string summary;  // one line, for the tool's --help
  std::string details;  // paragraphs for the command's --help; may be empty
  std::vector<Flag> flags;
  int (*main)(const Args& args);
};

// The flags and operand of one command line. Flags are written `--name
// value` or `--name=value`; `--help` (or -h) anywhere asks for the help.
class Args {
 public:
  // Throws UsageError for an unknown flag, a missing value or operand, a
  // repeated flag that is not repeatable, or an extra operand.
  static Args parse(const Command& command, std::span<char* const> argv);

  bool help() const { return help_; }
  // The i-th positional argument (parse checked that each is given).
  const std::string& operand(size_t i = 0) const { return operands_.at(i); }
  // Every value given for the flag, in order.
  std::span<const std::string> values(std::string_view flag) const;
  bool has(std::string_view flag) const { return !values(flag).empty(); }
  // The flag's value; throws UsageError when it is not given.
  const std::string& required(std::string_view flag) const;
  // The flag's value as an integer of at least `min`, or `fallback`.
  int64_t integer(std::string_view flag, int64_t fallback, int64_t min) const;

 private:
  bool help_ = false;
  std::vector<std::string> operands_;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

// "NAME=VALUE" split at the first '='; throws UsageError naming the flag
// unless both sides are non-empty.
std::pair<std::string, std::string> split_assignment(std::string_view flag, const std::string& text,
                                                     std::string_view form);

// The integer `text` is, at least `min`; throws UsageError naming `what`.
int64_t parse_integer(std::string_view what, const std::string& text, int64_t min);

// The command's --help: usage, details and one line per flag.
std::string help_text(const Command& command);

}  // namespace opgraph::cli

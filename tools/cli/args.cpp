#include "args.h"

#include <algorithm>
#include <charconv>

#include "report.h"

namespace opgraph::cli {
namespace {

const Flag* find_flag(const Command& command, std::string_view name) {
  for (const Flag& flag : command.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

std::string flag_names(const Command& command) {
  std::vector<std::string> names;
  for (const Flag& flag : command.flags) names.push_back(flag.name);
  return joined(names, "none");
}

// The words of command.operand, one per operand it takes.
std::vector<std::string> operand_names(const Command& command) {
  std::vector<std::string> names;
  for (size_t at = 0; at < command.operand.size();) {
    const size_t end = std::min(command.operand.find(' ', at), command.operand.size());
    names.push_back(command.operand.substr(at, end - at));
    at = end + 1;
  }
  return names;
}

}  // namespace

Args Args::parse(const Command& command, std::span<char* const> argv) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string_view word = argv[i];
    if (word == "--help" || word == "-h") {
      args.help_ = true;
      return args;  // the rest of the line does not matter
    }
    if (!word.starts_with("-") || word == "-") {
      if (command.operand.empty()) {
        throw UsageError(detail::concat("unexpected argument '", word, "'; '", command.name, "' takes only flags"));
      }
      if (args.operands_.size() == operand_names(command).size()) {
        std::string given;
        for (const std::string& operand : args.operands_) given += (given.empty() ? "'" : " '") + operand + "'";
        throw UsageError(detail::concat("unexpected argument '", word, "' after ", command.operand, " ", given));
      }
      args.operands_.emplace_back(word);
      continue;
    }
    const size_t equals = word.find('=');
    const std::string_view name = word.substr(0, equals);
    const Flag* flag = find_flag(command, name);
    if (flag == nullptr) {
      throw UsageError(
          detail::concat("unknown flag '", name, "'; the flags of '", command.name, "' are: ", flag_names(command)));
    }
    std::vector<std::string>& values = args.values_[flag->name];
    if (!values.empty() && !flag->repeatable) throw UsageError(detail::concat(flag->name, " is given twice"));
    if (flag->value.empty()) {
      if (equals != std::string_view::npos) throw UsageError(detail::concat(flag->name, " takes no value"));
      values.emplace_back();
    } else if (equals != std::string_view::npos) {
      values.emplace_back(word.substr(equals + 1));
    } else if (i + 1 < argv.size()) {
      values.emplace_back(argv[++i]);
    } else {
      throw UsageError(detail::concat(flag->name, " needs a value (", flag->name, " ", flag->value, ")"));
    }
  }
  const std::vector<std::string> names = operand_names(command);
  if (args.operands_.size() < names.size()) {
    throw UsageError(detail::concat("missing the ", names[args.operands_.size()], " argument"));
  }
  return args;
}

std::span<const std::string> Args::values(std::string_view flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return {};
  return it->second;
}

const std::string& Args::required(std::string_view flag) const {
  std::span<const std::string> given = values(flag);
  if (given.empty()) throw UsageError(detail::concat(flag, " is required"));
  return given.back();
}

int64_t Args::integer(std::string_view flag, int64_t fallback, int64_t min) const {
  return has(flag) ? parse_integer(flag, required(flag), min) : fallback;
}

int64_t parse_integer(std::string_view what, const std::string& text, int64_t min) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || value < min) {
    throw UsageError(detail::concat(what, ": expected an integer of at least ", min, ", got '", text, "'"));
  }
  return value;
}

std::pair<std::string, std::string> split_assignment(std::string_view flag, const std::string& text,
                                                     std::string_view form) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw UsageError(detail::concat(flag, " expects ", form, ", got '", text, "'"));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::string help_text(const Command& command) {
  std::string usage = "usage: opgraph " + command.name;
  if (!command.operand.empty()) usage += " " + command.operand;
  if (!command.flags.empty()) usage += " [flags]";
  std::string text = usage + "\n\n" + command.summary + "\n";
  if (!command.details.empty()) text += "\n" + command.details + "\n";
  size_t width = std::string("--help").size();
  auto spelled = [](const Flag& flag) { return flag.value.empty() ? flag.name : flag.name + " " + flag.value; };
  for (const Flag& flag : command.flags) width = std::max(width, spelled(flag).size());
  text += "\nflags:\n";
  auto line = [&](const std::string& left, const std::string& help) {
    text += "  " + left + std::string(width - left.size() + 2, ' ') + help + "\n";
  };
  for (const Flag& flag : command.flags) line(spelled(flag), flag.help + (flag.repeatable ? " (repeatable)" : ""));
  line("--help", "show this help");
  return text;
}

}  // namespace opgraph::cli

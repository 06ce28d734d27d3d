// opgraph run: one run of a model on inputs from .npy files, its outputs
// written as .npy files.
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>

#include "commands.h"
#include "model.h"
#include "opgraph/core/npy.h"

namespace opgraph::cli {
namespace {

// An output's file name: its value name, with any character a file name
// should not hold (a '/', a space) replaced by '_'.
std::string file_name(const std::string& output) {
  std::string name = output;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (name.starts_with('.')) name = "_" + name;  // no hidden files, and never "." or ".."
  return name + ".npy";
}

// The file each output is written to, or "" for an output listed again
// (the same array). Two names that make the same file name are an error.
std::vector<std::string> output_files(const std::vector<std::string>& names) {
  std::vector<std::string> files;
  std::map<std::string, const std::string*> written_by;
  for (const std::string& name : names) {
    const std::string file = file_name(name);
    const auto [previous, added] = written_by.emplace(file, &name);
    OPGRAPH_CHECK(added || *previous->second == name, "outputs '", *previous->second, "' and '", name,
                  "' would both be written to ", file);
    files.push_back(added ? file : "");
  }
  return files;
}

int run_main(const Args& args) {
  const std::filesystem::path output_dir = args.required("--output-dir");
  const Session session(args.operand(), session_options(args));
  const std::vector<std::string>& names = session.graph().outputs;
  const std::vector<std::string> files = output_files(names);
  const std::vector<Tensor> inputs = model_inputs(session, args, /*random_fill=*/false);
  State state = model_state(session, args, inputs);
  const std::vector<Tensor> outputs = session.run(inputs, &state);

  std::error_code error;
  std::filesystem::create_directories(output_dir, error);
  OPGRAPH_CHECK(!error, "cannot create the output folder '", output_dir.string(), "': ", error.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (files[i].empty()) continue;
    const std::string path = (output_dir / files[i]).string();
    write_npy(path, outputs[i]);
    std::cout << names[i] << ": " << outputs[i].str() << " -> " << path << "\n";
  }
  return 0;
}

}  // namespace

Command run_command() {
  return {"run",
          "model.opg",
          "run a model once on inputs from .npy files and write each output as OUTPUT_NAME.npy",
          "Every graph input must be given with --input; its dtype and shape are checked against the graph.",
          {input_flag(),
           {"--output-dir", "DIR", "where to write the outputs (created if missing); required"},
           threads_flag(),
           precision_flag(),
           weights_flag(),
           group_size_flag(),
           activations_flag(),
           products_flag(),
           disable_pass_flag(),
           package_path_flag()},
          run_main};
}

}  // namespace opgraph::cli

// The commands of the opgraph tool, one file each.
#pragma once

#include "args.h"

namespace opgraph::cli {

Command run_command();
Command bench_command();
Command generate_command();
Command inspect_command();
Command ops_command();
Command profile_command();
Command quantize_command();
Command test_package_command();

}  // namespace opgraph::cli

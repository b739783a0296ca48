#pragma once
// Runs a program as a child process and captures what it printed, so tests
// can check a real binary's exit status and output streams: the product's own
// runner (support/subprocess.hpp), under the name the tests use.

#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace tessera::testing {

using ProcessResult = SubprocessResult;

// argv[0] is the program's path; no shell is involved.
inline ProcessResult run_process(const std::vector<std::string>& argv) { return run_subprocess(argv); }

}  // namespace tessera::testing

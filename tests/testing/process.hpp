#pragma once
// Runs a program as a child process and captures what it printed, so tests
// can check a real binary's exit status and output streams.

#include <string>
#include <vector>

namespace tessera::testing {

struct ProcessResult {
  int exit_status = -1;  // the exit code, or 128 + signal number
  std::string out;
  std::string err;
};

// argv[0] is the program's path; no shell is involved.
ProcessResult run_process(const std::vector<std::string>& argv);

}  // namespace tessera::testing

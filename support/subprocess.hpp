#pragma once
// Running an external tool (the Poplar SDK's popc and pop-objdump) and
// capturing what it printed. No shell is involved: argv goes to the program
// as given, so a path or flag with spaces or metacharacters is one argument.
// The tool's stdin is /dev/null. Output goes to unlinked temporary files, not
// pipes, so a tool that prints a lot cannot deadlock against us.

#include <filesystem>
#include <string>
#include <vector>

namespace tessera {

struct SubprocessResult {
  int exit_status = -1;  // the exit code, or 128 + the signal number
  std::string out;
  std::string err;
};

// argv[0] is the program's path. IoError when it cannot be started.
SubprocessResult run_subprocess(const std::vector<std::string>& argv);

}  // namespace tessera

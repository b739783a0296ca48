#pragma once
// Runs the built `tessera` binary (TESSERA_CLI_PATH) as a user would.
#include <string>
#include <vector>

#include "tests/testing/process.hpp"

namespace tessera::testing {

inline ProcessResult run_tessera(std::vector<std::string> args) {
  args.insert(args.begin(), TESSERA_CLI_PATH);
  return run_process(args);
}

}  // namespace tessera::testing

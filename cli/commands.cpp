#include "cli/command.hpp"

namespace tessera::cli {

// Each subcommand lives in its own file under cli/ and is registered here.
CommandSet standard_commands() {
  CommandSet commands;
  return commands;
}

}  // namespace tessera::cli

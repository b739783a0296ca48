#include "cli/commands.hpp"

namespace tessera::cli {

// Each subcommand lives in its own file under cli/ and is registered here, in
// the order `tessera --help` lists them.
CommandSet standard_commands() {
  CommandSet commands;
  commands.add(disasm_command());
  commands.add(asm_command());
  commands.add(inspect_command());
  commands.add(validate_command());
  commands.add(compile_command());
  commands.add(pack_command());
  commands.add(simulate_command());
  commands.add(run_command());
  commands.add(profile_command());
  commands.add(siglip_command());
  return commands;
}

}  // namespace tessera::cli

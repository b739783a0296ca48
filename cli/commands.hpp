#pragma once
// One factory per subcommand; standard_commands() lists them.
#include "cli/command.hpp"

namespace tessera::cli {
Command disasm_command();
Command asm_command();
Command inspect_command();
Command validate_command();
Command pack_command();
Command simulate_command();
Command run_command();
Command profile_command();
Command compile_command();
Command siglip_command();
}  // namespace tessera::cli

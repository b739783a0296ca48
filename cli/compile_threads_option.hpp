#pragma once
// `--threads N` of `tessera compile` and `tessera siglip compile`: the host
// threads that schedule the exchange phases and emit the tiles' code
// (compiler::CompileOptions::threads).
// The package's bytes are the same for every N.

#include <boost/program_options.hpp>

#include "cli/command.hpp"

namespace tessera::cli {

void add_compile_threads_option(CommandSyntax& syntax);

// 0 (the machine's cores, capped) without the option; N otherwise;
// UsageError naming the option for a value outside 1 … the maximum.
unsigned compile_threads_option(const boost::program_options::variables_map& values);

}  // namespace tessera::cli

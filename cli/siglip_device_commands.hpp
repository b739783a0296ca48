#pragma once
// `tessera siglip compile` and `tessera siglip run`: a SigLIP tower's graph
// (models/siglip/graph.hpp) compiled into a package and run on a backend.

#include <string>
#include <vector>

#include "cli/command.hpp"

namespace tessera::cli {

int siglip_compile(const std::vector<std::string>& args, Streams& io);
int siglip_run(const std::vector<std::string>& args, Streams& io);

}  // namespace tessera::cli

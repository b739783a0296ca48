#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/command.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  tessera::cli::Streams io{std::cout, std::cerr};
  if (isatty(STDERR_FILENO) == 1) io.progress = &std::cerr;
  return tessera::cli::run(args, tessera::cli::standard_commands(), io);
}

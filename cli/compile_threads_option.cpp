#include "cli/compile_threads_option.hpp"

#include <string>

#include <fmt/format.h>

#include "cli/number_options.hpp"
#include "compiler/emit/link.hpp"
#include "support/error.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

void add_compile_threads_option(CommandSyntax& syntax) {
  syntax.options.add_options()(
      "threads", po::value<std::string>()->value_name("N"),
      fmt::format("host threads that schedule the exchange phases and emit the tiles' code, "
                  "1 to {} (default: the machine's cores, here {}); the package is the same "
                  "for every N",
                  compiler::emit::kMaxLinkThreads, compiler::emit::default_link_threads())
          .c_str());
}

unsigned compile_threads_option(const po::variables_map& values) {
  if (!values.count("threads")) return 0;
  const std::uint64_t threads = parse_unsigned_up_to(values["threads"].as<std::string>(),
                                                     "--threads", compiler::emit::kMaxLinkThreads);
  if (threads == 0) throw UsageError("--threads: at least 1 thread is needed");
  return static_cast<unsigned>(threads);
}

}  // namespace tessera::cli

#pragma once
// `--profile-samples[=RECORDS]`, one spelling for `tessera compile` and
// `tessera siglip compile|run`: build the package with cycle samples for a
// C600 profile (compiler::CompileOptions::profile_samples; docs/PROFILES.md).

#include <cstdint>
#include <optional>

#include <boost/program_options.hpp>

#include "cli/command.hpp"

namespace tessera::cli {

void add_profile_samples_option(CommandSyntax& syntax);

// nullopt without the option; RECORDS, or the default capacity without one;
// UsageError naming the option for a value outside 1 … the maximum.
std::optional<std::uint32_t> profile_samples_option(
    const boost::program_options::variables_map& values);

}  // namespace tessera::cli

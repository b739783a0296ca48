#include "cli/profile_samples_option.hpp"

#include <string>

#include <fmt/format.h>

#include "cli/number_options.hpp"
#include "compiler/emit/link.hpp"
#include "support/error.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

void add_profile_samples_option(CommandSyntax& syntax) {
  syntax.options.add_options()(
      "profile-samples",
      po::value<std::string>()
          ->implicit_value(std::to_string(compiler::emit::kDefaultProfileSampleRecords))
          ->value_name("RECORDS"),
      fmt::format("build with cycle samples, so that a run on a C600 has a profile: each tile "
                  "appends a record (8 bytes) at every step, kernel call and loop iteration to a "
                  "buffer of at most RECORDS records (default {}, at most {}); the rest are "
                  "dropped and counted (docs/PROFILES.md)",
                  compiler::emit::kDefaultProfileSampleRecords,
                  compiler::emit::kMaxProfileSampleRecords)
          .c_str());
}

std::optional<std::uint32_t> profile_samples_option(const po::variables_map& values) {
  if (!values.count("profile-samples")) return std::nullopt;
  const std::uint64_t records =
      parse_unsigned_up_to(values["profile-samples"].as<std::string>(), "--profile-samples",
                           compiler::emit::kMaxProfileSampleRecords);
  if (records == 0) {
    throw UsageError("--profile-samples: a buffer needs room for at least 1 record");
  }
  return static_cast<std::uint32_t>(records);
}

}  // namespace tessera::cli

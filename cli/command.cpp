#include "cli/command.hpp"

#include <algorithm>
#include <cctype>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cli/terminal_stream.hpp"
#include "support/error.hpp"
#include "support/logging.hpp"
#include "support/version.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

constexpr std::string_view kProgram = "tessera";
constexpr std::string_view kDescription =
    "Tessera compiles tensor graphs into whole-chip programs for the Graphcore IPU21 and runs\n"
    "them on a SystemC model of the C600 (the default, no hardware needed) or on a real C600.";

po::options_description global_options() {
  po::options_description options("Global options (before COMMAND)");
  options.add_options()("help,h", "show this help and exit")(
      "version", "show the version and git revision and exit")(
      "log-level", po::value<std::string>()->value_name("LEVEL")->default_value("warn"),
      fmt::format("log verbosity on stderr: {}", fmt::join(log_level_names(), ", ")).c_str());
  return options;
}

// Index of the first argument that is not a global option (or a global
// option's value): the command name. Which options take a value is asked of
// the options description, so this never disagrees with the parser.
std::size_t command_position(std::span<const std::string> args,
                             const po::options_description& options) {
  std::size_t i = 0;
  while (i < args.size()) {
    const std::string& arg = args[i];
    if (arg == "--") return i + 1;
    if (arg.size() < 2 || arg[0] != '-') return i;
    ++i;
    if (arg.find('=') != std::string::npos) continue;
    // Boost names long options without dashes and short ones with theirs ("-h").
    const bool is_long = arg.starts_with("--");
    const std::string name = is_long ? arg.substr(2) : arg.substr(0, 2);
    const auto* option = options.find_nothrow(name, false);
    const bool value_attached = !is_long && arg.size() > 2;
    if (option != nullptr && option->semantic()->max_tokens() > 0 && !value_attached) {
      ++i;  // the option's value is the next argument
    }
  }
  // A value-taking option at the very end leaves i one past the end; the
  // parser then reports the missing value.
  return std::min(i, args.size());
}

void print_global_help(const CommandSet& commands, const po::options_description& options,
                       std::ostream& out) {
  out << "Usage: " << kProgram << " [--log-level LEVEL] COMMAND [ARGS...]\n"
      << "       " << kProgram << " --help | --version\n\n"
      << kDescription << "\n\nCommands:\n";
  std::size_t width = 4;
  for (const auto& command : commands.all()) width = std::max(width, command.name.size());
  out << fmt::format("  {:<{}}  {}\n", "help", width, "show help for a command");
  for (const auto& command : commands.all()) {
    out << fmt::format("  {:<{}}  {}\n", command.name, width, command.summary);
  }
  out << '\n' << options << "\nRun '" << kProgram << " COMMAND --help' for a command's options.\n";
}

// One line, whatever the message contains.
std::string one_line(std::string_view text) {
  std::string line(text);
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

int dispatch(std::span<const std::string> args, const CommandSet& commands, Streams& io,
             std::string& failing_command) {
  const auto options = global_options();
  const std::size_t split = command_position(args, options);
  const std::vector<std::string> global(args.begin(), args.begin() + static_cast<long>(split));
  po::variables_map globals;
  po::store(po::command_line_parser(global).options(options).run(), globals);
  po::notify(globals);

  configure_logging(parse_log_level(globals["log-level"].as<std::string>()));
  spdlog::debug("{} {} (git {})", kProgram, version(), git_revision());

  if (globals.count("version")) {
    io.out << kProgram << ' ' << version() << " (git " << git_revision() << ")\n";
    return kExitSuccess;
  }
  if (globals.count("help") || split == args.size()) {
    print_global_help(commands, options, io.out);
    // A bare `tessera` is a usage error: it did nothing that was asked.
    return globals.count("help") ? kExitSuccess : kExitUsage;
  }

  std::string name = args[split];
  std::vector<std::string> rest(args.begin() + static_cast<long>(split) + 1, args.end());
  if (name == "help") {
    if (rest.empty()) {
      print_global_help(commands, options, io.out);
      return kExitSuccess;
    }
    if (rest.size() > 1) throw UsageError("help takes at most one command name");
    name = rest.front();
    rest = {"--help"};
  }
  const Command* command = commands.find(name);
  if (command == nullptr) {
    throw UsageError(fmt::format("unknown command '{}'", name));
  }
  failing_command = name;
  spdlog::debug("running command {} with {} argument(s)", name, rest.size());
  return command->run(rest, io);
}

}  // namespace

void CommandSet::add(Command command) {
  if (command.name == "help" || find(command.name) != nullptr) {
    throw Error(fmt::format("command '{}' is defined twice", command.name));
  }
  commands_.push_back(std::move(command));
}

const Command* CommandSet::find(std::string_view name) const {
  auto it = std::find_if(commands_.begin(), commands_.end(),
                         [&](const Command& c) { return c.name == name; });
  return it == commands_.end() ? nullptr : &*it;
}

void CommandSyntax::required_argument(const char* argument) {
  hidden.add_options()(argument, po::value<std::string>()->required(), argument);
  positional.add(argument, 1);
  required_arguments.emplace_back(argument);
}

std::optional<po::variables_map> parse_command_line(CommandSyntax& syntax,
                                                    const std::vector<std::string>& args,
                                                    Streams& io) {
  syntax.options.add_options()("help,h", "show this help and exit");
  po::options_description all;
  all.add(syntax.options).add(syntax.hidden);
  po::variables_map values;
  const po::parsed_options parsed =
      po::command_line_parser(args).options(all).positional(syntax.positional).run();
  po::store(parsed, values);
  if (values.count("help")) {
    io.out << "Usage: " << kProgram << ' ' << syntax.name << ' ' << syntax.usage << "\n\n"
           << syntax.summary << "\n\n"
           << syntax.options;
    if (!syntax.details.empty()) io.out << '\n' << syntax.details << '\n';
    return std::nullopt;
  }
  for (const auto& argument : syntax.required_arguments) {
    if (!values.count(argument)) {
      std::string upper = argument;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      // An option whose value is optional (--profile-samples[=RECORDS])
      // takes the next word when it is not an option: say so, since that
      // word was most likely the argument that is missing.
      for (const auto& option : parsed.options) {
        const auto* description = all.find_nothrow(option.string_key, false);
        if (option.original_tokens.size() == 2 && description != nullptr &&
            description->semantic()->min_tokens() == 0) {
          throw UsageError(fmt::format(
              "{} is missing ({} took '{}' as its value: write {}=VALUE, or give it after {})",
              upper, option.original_tokens[0], option.original_tokens[1],
              option.original_tokens[0], upper));
        }
      }
      throw UsageError(fmt::format("{} is missing", upper));
    }
  }
  po::notify(values);
  return values;
}

int run(std::span<const std::string> args, const CommandSet& commands, Streams& terminal) {
  // Every byte printed below, results and errors alike, is escaped.
  TerminalSafeStream out(terminal.out);
  TerminalSafeStream err(terminal.err);
  Streams io{out, err, terminal.progress};
  std::string failing_command;
  const auto prefix = [&] {
    return failing_command.empty() ? std::string(kProgram)
                                   : fmt::format("{} {}", kProgram, failing_command);
  };
  try {
    return dispatch(args, commands, io, failing_command);
  } catch (const po::error& error) {
    io.err << prefix() << ": " << one_line(error.what()) << " (see '" << prefix()
           << " --help')\n";
    return kExitUsage;
  } catch (const UsageError& error) {
    io.err << prefix() << ": " << one_line(error.what()) << " (see '" << prefix()
           << " --help')\n";
    return kExitUsage;
  } catch (const Error& error) {
    io.err << prefix() << ": error: " << one_line(error.what()) << '\n';
    return kExitFailure;
  } catch (const std::exception& error) {
    io.err << prefix() << ": internal error: " << one_line(error.what()) << '\n';
    return kExitFailure;
  }
}

}  // namespace tessera::cli

#pragma once
// The tessera command's subcommands and its dispatcher.
//
// `tessera [GLOBAL OPTIONS] COMMAND [ARGS...]`: global options come before the
// command; everything after the command name belongs to the command, which
// parses it with its own Boost.Program_options description and answers
// `--help` itself (parse_command_line does both).

#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace tessera::cli {

// Exit statuses of the tessera command.
enum ExitStatus : int {
  kExitSuccess = 0,
  kExitFailure = 1,  // the operation failed: bad input, device fault, I/O error
  kExitUsage = 2,    // the command line was wrong
};

struct Streams {
  std::ostream& out;
  std::ostream& err;
  // The raw terminal behind err when it is one, for progress lines (they
  // rewrite themselves with \r, which err would escape); null otherwise, and
  // then long commands print no progress (cli/progress.hpp).
  std::ostream* progress = nullptr;
};

struct Command {
  std::string name;
  std::string summary;  // one line, shown by `tessera --help`
  // Runs the command on the arguments after its name. Throws tessera::Error
  // (or UsageError) on failure; returns an ExitStatus otherwise.
  std::function<int(const std::vector<std::string>& args, Streams& io)> run;
};

// The commands one tessera binary offers, in the order `--help` lists them.
class CommandSet {
 public:
  void add(Command command);
  const Command* find(std::string_view name) const;
  const std::vector<Command>& all() const noexcept { return commands_; }

 private:
  std::vector<Command> commands_;
};

// What a command declares for parse_command_line.
struct CommandSyntax {
  std::string name;     // e.g. "disasm"
  std::string summary;  // one sentence
  std::string usage;    // arguments after the name, e.g. "[--base ADDR] WORD..."
  std::string details;  // optional paragraphs after the option list
  boost::program_options::options_description options{"Options"};
  // Parsed but not listed in --help: the targets of positional arguments.
  boost::program_options::options_description hidden;
  boost::program_options::positional_options_description positional;

  // Declares the one required positional `argument` (PACKAGE, SOURCE):
  // parsed, not listed among the options.
  void required_argument(const char* argument);
  std::vector<std::string> required_arguments;  // for the "missing PACKAGE" message
};

// Parses a command's arguments. Returns nullopt after printing help when
// --help was given; throws UsageError for anything Boost rejects.
std::optional<boost::program_options::variables_map> parse_command_line(
    CommandSyntax& syntax, const std::vector<std::string>& args, Streams& io);

// Runs the tessera command line (args excludes the program name) and returns
// the exit status. Every error becomes one line on io.err. Everything it
// prints goes through escape_for_terminal (cli/terminal_stream.hpp), so no
// string from a file can put a control character on the terminal.
int run(std::span<const std::string> args, const CommandSet& commands, Streams& io);

// The subcommands of the installed tessera binary.
CommandSet standard_commands();

}  // namespace tessera::cli

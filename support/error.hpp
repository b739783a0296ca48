#pragma once
// The error hierarchy every Tessera library throws at its boundaries.
//
// An error carries a message and a stack of context, outermost first, added as
// it propagates (the kj idiom): what was being done, on which object. what()
// joins them so the final text reads like a chain of reasons, e.g.
//   "loading model.ipuexe: tiles[12].segments[3]: blobOffset 0x... + fileSize 1 overflows"
// The CLI prints what() on one line; tests match on the type and on message().

#include <concepts>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

class Error : public std::exception {
 public:
  explicit Error(std::string message);

  // The innermost reason, without context.
  const std::string& message() const noexcept { return message_; }
  // Context added while propagating, outermost first.
  const std::vector<std::string>& context() const noexcept { return context_; }
  // Adds an outer layer of context ("while doing X").
  void add_context(std::string outer);
  // Context and message joined with ": ".
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  void rebuild_text();

  std::string message_;
  std::vector<std::string> context_;
  std::string text_;
};

// The caller used an interface wrongly: bad command-line arguments, an
// argument outside its documented range. The CLI exits with status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Untrusted input (a file, a package, a configuration) is malformed. The
// field path names where, e.g. "tiles[12].segments[3].blobOffset"; it becomes
// the innermost context.
class InputError : public Error {
 public:
  explicit InputError(std::string message) : Error(std::move(message)) {}
  InputError(std::string_view field_path, std::string message);
};

// Arithmetic on untrusted values would overflow or leave its permitted range.
class ArithmeticError : public InputError {
 public:
  using InputError::InputError;
};

// The operating system refused an operation (open, read, write, ioctl).
class IoError : public Error {
 public:
  using Error::Error;
};

// Runs body(); an Error escaping it gets `context` added as its outer layer.
template <std::invocable F>
decltype(auto) with_context(std::string_view context, F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (Error& error) {
    error.add_context(std::string(context));
    throw;
  }
}

// The same, with the context made by context() only when an Error escapes:
// for a loop over millions of items (a phase's transfers, a row's
// instructions), where formatting a context per item would cost more than
// the work it describes.
template <std::invocable Context, std::invocable F>
  requires std::convertible_to<std::invoke_result_t<Context&>, std::string>
decltype(auto) with_context(Context&& context, F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (Error& error) {
    error.add_context(std::string(context()));
    throw;
  }
}

}  // namespace tessera

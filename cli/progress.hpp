#pragma once
// Progress of long work (compiling, running) on the terminal: one line,
// "tessera: PHASE  42 %  3.1 s", rewritten in place and refreshed twice a
// second so the elapsed time moves while a phase works; erased when the work
// ends, so results and errors print on a clean line. Silent when stderr is
// not a terminal (Streams::progress is null): logs and pipes stay clean.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>

namespace tessera::cli {

class Progress {
 public:
  explicit Progress(std::ostream* terminal,
                    std::chrono::milliseconds refresh = std::chrono::milliseconds(500));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The work now in progress and how far it is (0..1), when that is known.
  // Names from files are escaped (support/terminal_text.hpp).
  void phase(std::string_view name, std::optional<double> fraction = std::nullopt);
  // Erases the line until the next phase(): call it before printing results
  // to stdout on the same terminal (and flush them before the next phase).
  void hide();

 private:
  void draw_locked();

  std::ostream* terminal_;
  std::chrono::steady_clock::time_point started_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string phase_;
  std::optional<double> fraction_;
  std::thread ticker_;
};

}  // namespace tessera::cli

#include "cli/progress.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/terminal_text.hpp"

namespace tessera::cli {

// "\r" goes back to the line's start and ESC [ K erases to its end.
constexpr std::string_view kRewrite = "\r\x1b[K";

Progress::Progress(std::ostream* terminal, std::chrono::milliseconds refresh)
    : terminal_(terminal), started_(std::chrono::steady_clock::now()) {
  if (terminal_ == nullptr) return;
  ticker_ = std::thread([this, refresh] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, refresh, [this] { return stopping_; })) draw_locked();
  });
}

Progress::~Progress() {
  if (terminal_ == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  ticker_.join();
  *terminal_ << kRewrite << std::flush;
}

void Progress::phase(std::string_view name, std::optional<double> fraction) {
  if (terminal_ == nullptr) return;
  std::lock_guard lock(mutex_);
  phase_ = escape_for_terminal(name);
  fraction_ = fraction;
  draw_locked();
}

void Progress::hide() {
  if (terminal_ == nullptr) return;
  std::lock_guard lock(mutex_);
  phase_.clear();
  *terminal_ << kRewrite << std::flush;
}

void Progress::draw_locked() {
  if (phase_.empty()) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::string done =
      fraction_ ? fmt::format("  {:3.0f} %", 100.0 * std::clamp(*fraction_, 0.0, 1.0)) : "";
  *terminal_ << kRewrite << fmt::format("tessera: {}{}  {:.1f} s", phase_, done, seconds)
             << std::flush;
}

}  // namespace tessera::cli

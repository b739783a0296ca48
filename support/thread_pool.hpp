#pragma once
// A fixed pool of host threads for work that splits into independent items
// (the simulator runs the tiles released together on it, ARCHITECTURE.md
// decision 11). `for_each(n, work)` calls work(i) once for every i < n, on
// the pool's threads and the caller's, and returns when all are done; which
// thread runs which item is unspecified, so the items must not depend on one
// another. An exception from an item is rethrown in the caller (the lowest
// item's, whatever the thread count, so that failures are deterministic).

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  // `threads` host threads in all, the caller's included: 1 runs everything
  // on the caller; 0 means the machine's cores.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }
  void for_each(std::size_t items, const std::function<void(std::size_t)>& work);

  // What `threads = 0` means here: the host's cores (at least 1).
  static unsigned machine_threads() noexcept;

 private:
  void worker_loop();
  void run_items();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  // The current job, guarded by mutex_ except `next_`, taken under it too
  // (items are coarse: a tile's run between two interactions).
  const std::function<void(std::size_t)>* work_ = nullptr;
  std::size_t items_ = 0;
  std::size_t next_ = 0;
  std::size_t finished_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
  std::size_t failed_item_ = 0;
  std::exception_ptr failure_;
};

}  // namespace tessera

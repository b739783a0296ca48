#include "support/thread_pool.hpp"

#include <utility>

namespace tessera {

unsigned ThreadPool::machine_threads() noexcept {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : cores;
}

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = machine_threads();
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_items() {
  std::unique_lock lock(mutex_);
  while (next_ < items_) {
    const std::size_t item = next_++;
    const auto& work = *work_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      work(item);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && (!failure_ || item < failed_item_)) {
      failure_ = failure;
      failed_item_ = item;
    }
    if (++finished_ == items_) done_.notify_all();
  }
}

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_items();
  }
}

void ThreadPool::for_each(std::size_t items, const std::function<void(std::size_t)>& work) {
  if (items == 0) return;
  if (workers_.empty() || items == 1) {
    // Inline, with the same failure rule: every item runs, the lowest
    // failing item's exception is rethrown.
    std::exception_ptr failure;
    for (std::size_t i = 0; i < items; ++i) {
      try {
        work(i);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    work_ = &work;
    items_ = items;
    next_ = 0;
    finished_ = 0;
    failure_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  run_items();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return finished_ == items_; });
  work_ = nullptr;
  items_ = 0;
  if (failure_) {
    std::exception_ptr failure = std::exchange(failure_, nullptr);
    lock.unlock();
    std::rethrow_exception(failure);
  }
}

}  // namespace tessera

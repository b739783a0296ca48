#pragma once
// Independent work over the host's cores, for the models' CPU code (the
// reference's element-wise passes, the quantizer's Hessian blocks): fn(begin,
// end) is called on disjoint ranges covering [0, n), one per thread, at least
// min_chunk items each. Each item must be computed independently of the
// others, so results do not depend on how many threads there are.
//
// An exception thrown by fn (on any thread) is rethrown on the caller's
// thread after every thread has finished: a worker's error is an error, not
// std::terminate.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::models {

template <typename Fn>
void parallel_for(std::size_t n, std::size_t min_chunk, Fn&& fn) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads =
      std::min(cores, std::max<std::size_t>(1, n / std::max<std::size_t>(min_chunk, 1)));
  if (threads <= 1) {
    fn(std::size_t{0}, n);
    return;
  }
  const std::size_t chunk = (n + threads - 1) / threads;
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto guarded = [&](std::size_t begin, std::size_t end) {
    try {
      fn(begin, end);
    } catch (...) {
      const std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  std::vector<std::jthread> workers;  // joined on every path out, a throw included
  for (std::size_t t = 1; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    workers.emplace_back([&guarded, begin, end] { guarded(begin, end); });
  }
  guarded(std::size_t{0}, std::min(n, chunk));
  workers.clear();  // joins
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace tessera::models

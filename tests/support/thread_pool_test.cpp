#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

TEST(ThreadPool, EveryItemRunsExactlyOnce) {
  for (const unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (const std::size_t items : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> runs(items);
      pool.for_each(items, [&](std::size_t i) { runs[i].fetch_add(1); });
      for (std::size_t i = 0; i < items; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
    }
  }
}

TEST(ThreadPool, ManyShortJobsInARow) {
  ThreadPool pool(3);
  std::atomic<std::size_t> total{0};
  for (int job = 0; job < 2000; ++job) {
    pool.for_each(5, [&](std::size_t i) { total.fetch_add(i); });
  }
  EXPECT_EQ(total.load(), 2000u * 10);
}

TEST(ThreadPool, TheLowestFailingItemsExceptionReachesTheCaller) {
  for (const unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    try {
      pool.for_each(64, [&](std::size_t i) {
        ran.fetch_add(1);
        if (i == 9 || i == 40) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "item 9") << threads << " threads";
    }
    EXPECT_EQ(ran.load(), 64) << "the other items still ran";
    // The pool stays usable.
    std::atomic<int> after{0};
    pool.for_each(10, [&](std::size_t) { after.fetch_add(1); });
    EXPECT_EQ(after.load(), 10);
  }
}

TEST(ThreadPool, ZeroThreadsMeansTheMachinesCores) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), ThreadPool::machine_threads());
  EXPECT_GE(ThreadPool::machine_threads(), 1u);
}

}  // namespace
}  // namespace tessera

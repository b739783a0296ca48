#pragma once
// The elements of one region a kernel model touched, as a bitmap, reported at
// the end as maximal runs of consecutive elements: what a model with kSparse
// spans notes (KernelMemory::note_read / note_written), in as few notes as
// the touched bytes allow, whatever order the model visits them in (a
// permutation is one run, however its table orders the pairs; a head's slice
// of an A16 shard one run per whole panel).

#include <bit>
#include <cstdint>
#include <vector>

namespace tessera::kernels {

class TouchedElements {
 public:
  explicit TouchedElements(std::uint64_t elements) : words_((elements + 63) / 64, 0) {}
  void mark(std::uint64_t index) noexcept {
    words_[index / 64] |= std::uint64_t{1} << (index % 64);
  }

  // report(first, count) for each maximal run of marked elements.
  template <typename Report>
  void for_each_run(Report report) const {
    std::uint64_t run_first = 0, run_length = 0;
    for (std::size_t w = 0; w < words_.size(); ++w) {
      std::uint64_t word = words_[w];
      std::uint64_t bit = 0;
      while (bit < 64) {
        const std::uint64_t rest = word >> bit;
        if (rest == 0) break;
        const auto zeros = static_cast<std::uint64_t>(std::countr_zero(rest));
        const auto ones = static_cast<std::uint64_t>(std::countr_one(rest >> zeros));
        const std::uint64_t first = 64 * w + bit + zeros;
        if (run_length != 0 && run_first + run_length == first) {
          run_length += ones;
        } else {
          if (run_length != 0) report(run_first, run_length);
          run_first = first;
          run_length = ones;
        }
        bit += zeros + ones;
      }
    }
    if (run_length != 0) report(run_first, run_length);
  }

 private:
  std::vector<std::uint64_t> words_;
};

}  // namespace tessera::kernels

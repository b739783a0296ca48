#pragma once
// Where each host page sits in the device's view of host memory. The driver
// translates host addresses in 4 KiB pages and the buffers attached under
// page indices form one address space in ascending index order
// (driver-host-protocol.md §4, §8.5) [INF]. So a page occupies its size
// rounded up to 4 KiB, and its device-side base is the sum of the spans of
// every page with a lower index. The runtime attaches buffers of exactly these
// spans; the compiler's host plans address pages through these bases.

#include <cstdint>

#include "schema/model.hpp"

namespace tessera::schema {

inline constexpr std::uint64_t kHostPageGranule = 4096;

// A page's size rounded up to whole 4 KiB host pages (ArithmeticError on overflow).
std::uint64_t host_page_span(const HostPage& page);

// The device-side host address of byte 0 of page `index`; UsageError when no
// page has that index.
std::uint64_t host_page_base(const HostExchange& exchange, std::uint32_t index);

}  // namespace tessera::schema

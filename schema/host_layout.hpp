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

// The most host memory a package may ask the runtime to map and pin for its
// pages: the sum of their spans. The compiler's pages take 4 KiB per tile
// that moves host data plus the command page (under 6 MiB for 1472 tiles);
// 256 MiB leaves room for larger slots while keeping a package from making
// the host pin memory it cannot spare. It also keeps every page far below
// BUFFER_ATTACH's 32-bit size.
inline constexpr std::uint64_t kMaxHostPagesBytes = std::uint64_t{256} << 20;

// A page's size rounded up to whole 4 KiB host pages (ArithmeticError on overflow).
std::uint64_t host_page_span(const HostPage& page);

// The device-side host address of byte 0 of page `index`; UsageError when no
// page has that index.
std::uint64_t host_page_base(const HostExchange& exchange, std::uint32_t index);

}  // namespace tessera::schema

#include "schema/host_layout.hpp"

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::schema {

std::uint64_t host_page_span(const HostPage& page) {
  const std::uint64_t rounded =
      checked_add(page.size, kHostPageGranule - 1, "host page size") / kHostPageGranule;
  return rounded * kHostPageGranule;
}

std::uint64_t host_page_base(const HostExchange& exchange, std::uint32_t index) {
  bool found = false;
  std::uint64_t base = 0;
  for (const HostPage& page : exchange.pages) {
    if (page.index < index) base = checked_add(base, host_page_span(page), "host page base");
    if (page.index == index) found = true;
  }
  if (!found) throw UsageError(fmt::format("host page {} does not exist", index));
  return base;
}

}  // namespace tessera::schema

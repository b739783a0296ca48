#include "runtime/host_pages.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "schema/host_layout.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::runtime {

HostPages::HostPages(const schema::HostExchange& exchange) {
  for (const schema::HostPage& page : exchange.pages) {
    const std::uint64_t span = schema::host_page_span(page);
    buffers_.emplace(page.index, HostBuffer(checked_cast<std::size_t>(span, "host page size")));
  }
}

HostPages::~HostPages() {
  for (auto index = attached_.rbegin(); index != attached_.rend(); ++index) {
    try {
      transport_->detach(*index);
    } catch (const std::exception& error) {
      spdlog::warn("detaching host page {}: {}", *index, error.what());
    }
  }
}

void HostPages::attach(Transport& transport, const std::vector<std::uint32_t>& order) {
  transport_ = &transport;
  for (const std::uint32_t index : order) {
    transport.attach(index, page(index));
    attached_.push_back(index);
  }
}

HostBuffer& HostPages::page(std::uint32_t index) {
  const auto found = buffers_.find(index);
  if (found == buffers_.end()) throw UsageError(fmt::format("host page {} does not exist", index));
  return found->second;
}

}  // namespace tessera::runtime

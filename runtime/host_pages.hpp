#pragma once
// The host pages of one session: one HostBuffer per package page, sized to
// the page's span (schema/host_layout.hpp), attached to the transport in the
// package's attach order and detached in reverse when this goes away. The
// detaching happens in the destructor's body, before the buffers (members)
// are unmapped, so the device never holds memory that is gone — whether the
// session ends normally or its start fails half-way through attaching.

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/transport.hpp"
#include "schema/model.hpp"

namespace tessera::runtime {

class HostPages {
 public:
  // Maps every page of a validated host exchange (nothing is attached yet).
  explicit HostPages(const schema::HostExchange& exchange);
  // Detaches every page attach() attached, in reverse order. Never throws:
  // a failing detach is logged.
  ~HostPages();
  HostPages(const HostPages&) = delete;
  HostPages& operator=(const HostPages&) = delete;

  // Attaches the pages in `order`. If one fails, the ones attached before it
  // stay recorded, so the destructor detaches them.
  void attach(Transport& transport, const std::vector<std::uint32_t>& order);

  // UsageError when there is no page `index`.
  HostBuffer& page(std::uint32_t index);

 private:
  std::map<std::uint32_t, HostBuffer> buffers_;
  Transport* transport_ = nullptr;
  std::vector<std::uint32_t> attached_;
};

}  // namespace tessera::runtime

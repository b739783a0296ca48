#include "compiler/lower/program.hpp"

#include "support/checked.hpp"

namespace tessera::compiler::lower {

std::uint32_t Program::add_provenance(std::string text) {
  provenance.push_back(std::move(text));
  return checked_cast<std::uint32_t>(provenance.size() - 1, "provenance index");
}

BufferId Program::add_buffer(Buffer buffer) {
  buffers.push_back(std::move(buffer));
  return checked_cast<BufferId>(buffers.size() - 1, "buffer id");
}

}  // namespace tessera::compiler::lower

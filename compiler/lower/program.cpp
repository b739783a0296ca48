#include "compiler/lower/program.hpp"

namespace tessera::compiler::lower {

std::uint32_t Program::add_provenance(std::string text) {
  provenance.push_back(std::move(text));
  return static_cast<std::uint32_t>(provenance.size() - 1);
}

BufferId Program::add_buffer(Buffer buffer) {
  buffers.push_back(std::move(buffer));
  return static_cast<BufferId>(buffers.size() - 1);
}

}  // namespace tessera::compiler::lower

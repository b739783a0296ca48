#include "support/error.hpp"

namespace tessera {

Error::Error(std::string message) : message_(std::move(message)) { rebuild_text(); }

void Error::add_context(std::string outer) {
  context_.insert(context_.begin(), std::move(outer));
  rebuild_text();
}

void Error::rebuild_text() {
  text_.clear();
  for (const auto& layer : context_) {
    text_ += layer;
    text_ += ": ";
  }
  text_ += message_;
}

InputError::InputError(std::string_view field_path, std::string message)
    : Error(std::move(message)) {
  if (!field_path.empty()) add_context(std::string(field_path));
}

}  // namespace tessera

#pragma once
// SHA-256 through OpenSSL's EVP interface, one-shot and incremental.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "schema/model.hpp"

namespace tessera::schema {

Sha256 sha256(std::span<const std::uint8_t> bytes);

// Lower-case hex, 64 characters.
std::string to_hex(const Sha256& digest);

class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void update(std::span<const std::uint8_t> bytes);
  void update(std::string_view text);
  // Finishes the hash; the stream cannot be updated afterwards.
  Sha256 finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace tessera::schema

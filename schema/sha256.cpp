#include "schema/sha256.hpp"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::schema {

struct Sha256Stream::Context {
  EVP_MD_CTX* md = nullptr;
  bool finished = false;
};

Sha256Stream::Sha256Stream() : context_(std::make_unique<Context>()) {
  context_->md = EVP_MD_CTX_new();
  if (context_->md == nullptr || EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(context_->md);
    throw Error("OpenSSL could not start a SHA-256 digest");
  }
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(context_->md); }

void Sha256Stream::update(std::span<const std::uint8_t> bytes) {
  if (context_->finished) throw Error("Sha256Stream::update after finish");
  if (!bytes.empty() && EVP_DigestUpdate(context_->md, bytes.data(), bytes.size()) != 1) {
    throw Error("OpenSSL SHA-256 update failed");
  }
}

void Sha256Stream::update(std::string_view text) {
  update(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

Sha256 Sha256Stream::finish() {
  if (context_->finished) throw Error("Sha256Stream::finish called twice");
  Sha256 digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md, digest.data(), &length) != 1 || length != digest.size()) {
    throw Error("OpenSSL SHA-256 finish failed");
  }
  context_->finished = true;
  return digest;
}

Sha256 sha256(std::span<const std::uint8_t> bytes) {
  Sha256Stream stream;
  stream.update(bytes);
  return stream.finish();
}

std::string to_hex(const Sha256& digest) {
  std::string hex;
  hex.reserve(64);
  for (const auto byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

}  // namespace tessera::schema

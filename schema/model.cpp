#include "schema/model.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "schema/sha256.hpp"
#include "schema/validate.hpp"
#include "support/checked.hpp"

namespace tessera::schema {

std::uint32_t BlobStore::add(std::vector<std::uint8_t> bytes) {
  const Sha256 digest = sha256(bytes);
  return add_verified(std::move(bytes), digest);
}

std::uint32_t BlobStore::add_verified(std::vector<std::uint8_t> bytes, const Sha256& digest) {
  if (const auto found = index_of_.find(digest); found != index_of_.end()) return found->second;
  return add_entry(
      Entry{digest, std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes))});
}

std::uint32_t BlobStore::add_shared(const BlobStore& source, std::uint32_t index) {
  if (index >= source.blobs_.size()) {
    throw std::out_of_range(fmt::format("blob {} of {}", index, source.blobs_.size()));
  }
  const Entry& entry = source.blobs_[index];
  if (const auto found = index_of_.find(entry.digest); found != index_of_.end()) {
    return found->second;
  }
  return add_entry(entry);
}

std::uint32_t BlobStore::add_entry(Entry entry) {
  const auto index = checked_cast<std::uint32_t>(blobs_.size(), "blob count");
  total_bytes_ = checked_add<std::uint64_t>(total_bytes_, entry.bytes->size(), "total blob bytes");
  const Sha256 digest = entry.digest;
  blobs_.push_back(std::move(entry));
  index_of_.emplace(digest, index);
  return index;
}

std::span<const std::uint8_t> BlobStore::bytes(std::uint32_t index) const {
  if (index >= blobs_.size()) {
    throw std::out_of_range(fmt::format("blob {} of {}", index, blobs_.size()));
  }
  return *blobs_[index].bytes;
}

const Sha256& BlobStore::digest(std::uint32_t index) const {
  if (index >= blobs_.size()) {
    throw std::out_of_range(fmt::format("blob {} of {}", index, blobs_.size()));
  }
  return blobs_[index].digest;
}

bool operator==(const BlobStore& a, const BlobStore& b) {
  return std::equal(a.blobs_.begin(), a.blobs_.end(), b.blobs_.begin(), b.blobs_.end(),
                    [](const auto& x, const auto& y) { return x.digest == y.digest; });
}

std::uint32_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::kF32:
    case DType::kU32:
    case DType::kI32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kF8F143:
    case DType::kU8:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kU32: return "u32";
    case DType::kF8F143: return "f8f143";
    case DType::kI32: return "i32";
    case DType::kU8: return "u8";
  }
  return "?";
}

std::string_view symbol_kind_name(SymbolKind kind) noexcept {
  switch (kind) {
    case SymbolKind::kKernel: return "kernel";
    case SymbolKind::kRuntimeHelper: return "runtime-helper";
    case SymbolKind::kExchangeRow: return "exchange-row";
    case SymbolKind::kData: return "data";
    case SymbolKind::kCode: return "code";
  }
  return "?";
}

std::string_view allocation_kind_name(AllocationKind kind) noexcept {
  switch (kind) {
    case AllocationKind::kTensor: return "tensor";
    case AllocationKind::kStaging: return "staging";
    case AllocationKind::kCode: return "code";
    case AllocationKind::kExchangeRow: return "exchange-row";
    case AllocationKind::kRuntime: return "runtime";
    case AllocationKind::kScratch: return "scratch";
  }
  return "?";
}

std::uint64_t payload_bytes(const Binding& binding) {
  std::uint64_t bytes = dtype_size(binding.dtype);
  for (const auto dimension : binding.shape) {
    bytes = checked_mul<std::uint64_t>(bytes, dimension, "shape product");
  }
  return bytes;
}

Application canonical(const Application& application) {
  return canonical(Application(application));
}

Application canonical(Application&& application) {
  validate_blob_references(application);
  Application result = std::move(application);
  std::sort(result.tiles.begin(), result.tiles.end(),
            [](const auto& a, const auto& b) { return a.tile < b.tile; });
  // Renumber blobs in order of first use; the store deduplicates and the
  // bytes are shared with the source store, not copied.
  const BlobStore source = std::move(result.blobs);
  result.blobs = BlobStore();
  for (auto& tile : result.tiles) {
    std::sort(tile.segments.begin(), tile.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    for (auto& segment : tile.segments) {
      segment.blob = result.blobs.add_shared(source, segment.blob);
    }
  }
  std::sort(result.debug.tiles.begin(), result.debug.tiles.end(),
            [](const auto& a, const auto& b) { return a.tile < b.tile; });
  for (auto& tile : result.debug.tiles) {
    std::sort(tile.call_sites.begin(), tile.call_sites.end(),
              [](const auto& a, const auto& b) { return a.pc < b.pc; });
  }
  return result;
}

bool is_canonical(const Application& application) {
  // Sorted strictly (sorting then leaves everything where it is) and blobs
  // numbered in order of first use, every one used once at least (a store
  // holds each digest once, so renumbering would change nothing).
  const auto strictly = [](const auto& list, auto key) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      if (!(key(list[i - 1]) < key(list[i]))) return false;
    }
    return true;
  };
  if (!strictly(application.tiles, [](const TileImage& t) { return t.tile; })) return false;
  std::uint32_t next_new_blob = 0;
  for (const TileImage& tile : application.tiles) {
    if (!strictly(tile.segments, [](const Segment& s) { return s.address; })) return false;
    for (const Segment& segment : tile.segments) {
      if (segment.blob > next_new_blob) return false;
      if (segment.blob == next_new_blob) ++next_new_blob;
    }
  }
  if (next_new_blob != application.blobs.size()) return false;
  if (!strictly(application.debug.tiles, [](const TileDebug& t) { return t.tile; })) return false;
  for (const TileDebug& tile : application.debug.tiles) {
    if (!strictly(tile.call_sites, [](const CallSite& c) { return c.pc; })) return false;
  }
  return true;
}

std::string_view call_side_name(CallSide side) noexcept {
  switch (side) {
    case CallSide::kInput: return "input";
    case CallSide::kOutput: return "output";
  }
  return "?";
}

BindingLookup::BindingLookup(const Application& application) {
  for (const auto* bindings : {&application.inputs, &application.weights}) {
    for (const Binding& binding : *bindings) input_side_.emplace(binding.name, &binding);
  }
  for (const Binding& binding : application.outputs) output_side_.emplace(binding.name, &binding);
}

const Binding* BindingLookup::find(CallSide side, std::string_view name) const {
  const auto& named = side == CallSide::kInput ? input_side_ : output_side_;
  const auto found = named.find(name);
  return found != named.end() ? found->second : nullptr;
}

namespace {

struct InvocationPayload {
  std::vector<PayloadPart> parts;
  std::uint64_t bytes = 0;  // the parts with their padding, a whole number of words
};

std::uint64_t round_up_to_word(std::uint64_t bytes, const std::string& what) {
  return checked_add<std::uint64_t>(bytes, 3, what) & ~std::uint64_t{3};
}

InvocationPayload lay_out_invocation(const BindingLookup& bindings, const HostCall& call,
                                     CallSide side) {
  const auto& names = side == CallSide::kInput ? call.input_bindings : call.output_bindings;
  const std::string what = fmt::format("{} payload", call_side_name(side));
  InvocationPayload payload;
  payload.parts.reserve(names.size());
  for (const std::string& name : names) {
    const Binding* binding = bindings.find(side, name);
    if (binding == nullptr) {
      throw std::invalid_argument(
          fmt::format("call '{}': '{}' is not {} binding", call.name, name,
                      side == CallSide::kInput ? "an input or weight" : "an output"));
    }
    const std::uint64_t size = payload_bytes(*binding);
    // Every part starts on a word: the device moves host data in whole words,
    // so a binding whose size is not a multiple of 4 (odd f16 or f8 counts)
    // is followed by padding its last word may cover.
    const std::uint64_t offset = round_up_to_word(payload.bytes, what);
    payload.parts.push_back(PayloadPart{binding, offset, size});
    payload.bytes = checked_add(offset, size, what);
  }
  payload.bytes = round_up_to_word(payload.bytes, what);
  return payload;
}

}  // namespace

std::vector<PayloadPart> call_payload(const BindingLookup& bindings, const HostCall& call,
                                      CallSide side) {
  return lay_out_invocation(bindings, call, side).parts;
}

std::vector<PayloadPart> call_payload(const Application& application, const HostCall& call,
                                      CallSide side) {
  return call_payload(BindingLookup(application), call, side);
}

std::uint64_t call_payload_bytes(const BindingLookup& bindings, const HostCall& call,
                                 CallSide side) {
  const std::uint64_t invocation = lay_out_invocation(bindings, call, side).bytes;
  return checked_mul<std::uint64_t>(invocation, call.invocations,
                                    fmt::format("{} payload", call_side_name(side)));
}

std::uint64_t call_payload_bytes(const Application& application, const HostCall& call,
                                 CallSide side) {
  return call_payload_bytes(BindingLookup(application), call, side);
}

std::vector<std::uint8_t> segment_bytes(const Application& application, const Segment& segment) {
  const auto blob = application.blobs.bytes(segment.blob);
  checked_range(segment.blob_offset, segment.file_size, blob.size(), "segment blob window");
  if (segment.file_size > segment.memory_size) {
    throw std::invalid_argument("segment_bytes: fileSize exceeds memorySize");
  }
  std::vector<std::uint8_t> bytes(segment.memory_size, 0);
  const auto first = blob.begin() + static_cast<std::ptrdiff_t>(segment.blob_offset);
  std::copy(first, first + segment.file_size, bytes.begin());
  return bytes;
}

}  // namespace tessera::schema

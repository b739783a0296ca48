// Step 4 of linking, with device code (LinkOptions::device, issue 21 items 4
// and 5): each tile's kernels linked by the Colossus ELF linker
// (elf/linker.hpp) into one region-0 allocation of the tile's code, and the
// package padded to whole loader batches.
//
// Sizes first, as for every other piece of code: a probe link of the tile's
// kernel set at kProbeBase gives the extent the code placement reserves (an
// allocation aligned to the largest section alignment); the final link into
// exactly that allocation lays the sections out at the same offsets, because
// first-fit placement from a base aligned alike pads alike (checked). One
// kernel set links once per address, however many tiles share it.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {
namespace {

// The probe links into the upper linker region; its base is 16 KiB-aligned,
// so every section alignment up to that pads as it will in the allocation.
constexpr target::AddressRange kProbeRegion = target::kLinkerRegion2;
constexpr std::uint32_t kProbeBase = kProbeRegion.begin;
constexpr std::uint32_t kMaxAlignment = 0x4000;
static_assert(kProbeBase % kMaxAlignment == 0);

elf::LinkOptions options_for(const std::vector<std::string>& kernels,
                             std::vector<target::AddressRange> regions) {
  elf::LinkOptions options;
  options.entry = kernels.front();
  // The other entries are called through the register ABI from main, which
  // no object relocates against: they are roots too.
  options.retained.assign(kernels.begin() + 1, kernels.end());
  options.regions = std::move(regions);
  return options;
}

}  // namespace

bool Linker::has_device_code(const std::string& kernel) const {
  return options_.device != nullptr && options_.device->object(kernel) != nullptr;
}

std::shared_ptr<const DeviceLink> Linker::device_link(const std::set<std::string>& kernels) {
  if (const auto found = device_links_.find(kernels); found != device_links_.end()) {
    return found->second;
  }
  auto link = std::make_shared<DeviceLink>();
  std::vector<const elf::ObjectFile*> objects;
  for (const std::string& kernel : kernels) {
    const elf::ObjectFile* object = options_.device->object(kernel);
    if (object == nullptr) continue;
    link->kernels.push_back(kernel);
    if (std::find(objects.begin(), objects.end(), object) == objects.end()) {
      objects.push_back(object);
    }
  }
  if (link->kernels.empty()) return device_links_[kernels] = nullptr;
  for (const auto* object : objects) link->objects.push_back(*object);
  const elf::LinkedImage probe =
      elf::link(link->objects, options_for(link->kernels, {kProbeRegion}));
  std::uint32_t end = kProbeBase;
  for (const auto& section : probe.sections) {
    if (section.alignment > kMaxAlignment) {
      throw LinkError(
          fmt::format("device kernels: section {} ({}) asks for alignment {:#x}; "
                      "the code placement aligns to at most {:#x}",
                      section.name, section.object, section.alignment, kMaxAlignment));
    }
    link->alignment = std::max(link->alignment, section.alignment);
    end = std::max(end, section.range().end);
    link->offsets.push_back(section.address - kProbeBase);
  }
  link->extent = end - kProbeBase;
  if (link->extent == 0) {
    throw LinkError(
        fmt::format("device kernels: linking {} placed no bytes", link->kernels.front()));
  }
  return device_links_[kernels] = std::move(link);
}

std::shared_ptr<const elf::LinkedImage> Linker::place_device_link(
    const std::set<std::string>& kernels, const DeviceLink& link, std::uint32_t address) {
  auto& image = device_images_[{kernels, address}];
  if (image) return image;
  auto placed = std::make_shared<elf::LinkedImage>(elf::link(
      link.objects, options_for(link.kernels, {target::AddressRange::from_size(
                                                  address, link.extent, "device kernels")})));
  bool same = placed->sections.size() == link.offsets.size();
  for (std::size_t i = 0; same && i < placed->sections.size(); ++i) {
    same = placed->sections[i].address - address == link.offsets[i];
  }
  if (!same) {
    throw LinkError(
        fmt::format("internal: device kernels linked at {:#x} are not laid out as "
                    "at the probe address {:#x}",
                    address, kProbeBase));
  }
  image = std::move(placed);
  return image;
}

bool Linker::every_call_linked() const {
  for (const auto& [tile, code] : code_) {
    for (const auto& [name, target] : code.stubs) {
      if (!code.linked.contains(name)) return false;
    }
  }
  return true;
}

void Linker::pad_to_loader_batches() {
  if (tiles_.empty()) return;
  const unsigned batch = target::kLoaderBatchTiles;
  const unsigned count = (static_cast<unsigned>(tiles_.back().value) / batch + 1) * batch;
  tiles_.clear();
  for (unsigned t = 0; t < count; ++t)
    tiles_.push_back(PhysicalTile(static_cast<std::uint16_t>(t)));
}

}  // namespace tessera::compiler::emit::linking

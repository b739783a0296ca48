#pragma once
// Image files for the vision models: PNG (libpng) and JPEG (libjpeg-turbo)
// decoded to 8-bit RGB, as PIL's Image.open(f).convert("RGB") gives them:
// grey is replicated to three channels, a palette is looked up, alpha and
// transparency are dropped (not composited), 16-bit samples keep their high
// byte (PIL's "RGB;16B"), and no gamma or colour profile is applied. EXIF
// orientation is ignored, as PIL and transformers ignore it. The format is
// told by the file's first bytes, not its name.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tessera::models {

struct Rgb8Image {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<std::uint8_t> pixels;  // row-major, R G B per pixel
};

// 2^28 pixels (16384 × 16384): a larger image is refused before anything is
// allocated for it.
inline constexpr std::uint64_t kMaxImagePixels = std::uint64_t{1} << 28;
// An image file is read whole before it is decoded; 1 GiB is far above any
// PNG or JPEG of kMaxImagePixels that a camera or a dataset holds.
inline constexpr std::uint64_t kMaxImageFileBytes = std::uint64_t{1} << 30;

// InputError naming the file for a malformed or unsupported image (a CMYK
// JPEG, neither PNG nor JPEG), IoError when it cannot be read.
Rgb8Image read_image(const std::filesystem::path& path);
// The same from bytes in memory (errors without the path).
Rgb8Image decode_image(std::span<const std::uint8_t> bytes);

}  // namespace tessera::models

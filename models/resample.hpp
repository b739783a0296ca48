#pragma once
// PIL's Image.resize(size, Image.BICUBIC) of an 8-bit image, exactly
// (Pillow's libImaging/Resample.c), which is what transformers' image
// processors call. It is a separable convolution:
//
//   - per axis, output pixel i is centred at (i + 0.5)·scale in the input,
//     scale = in / out; the filter is Keys' cubic with a = −0.5 and support
//     2, stretched by the scale when downscaling (support 2·scale, argument
//     divided by scale); the taps run from trunc(centre − support + 0.5) to
//     trunc(centre + support + 0.5), clipped to the image, and are
//     normalised to sum 1 in double;
//   - the weights become 22-bit fixed point, rounded half away from zero;
//   - the horizontal pass runs first (if the width changes), rounding each
//     sum to 8 bits and clipping to [0, 255] (accumulator starts at 2^21,
//     shift by 22); the vertical pass then reads those 8-bit values.
//
// An axis whose size does not change is copied, as PIL skips that pass.

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::models {

// `pixels` is height × width × channels, interleaved; so is the result
// (out_height × out_width × channels). UsageError for empty sizes or a
// pixel count that does not match.
std::vector<std::uint8_t> resize_bicubic(std::span<const std::uint8_t> pixels, std::uint32_t width,
                                         std::uint32_t height, std::uint32_t channels,
                                         std::uint32_t out_width, std::uint32_t out_height);

// One axis's fixed-point taps, exposed for tests: output i reads inputs
// [first[i], first[i] + weights[i].size()).
struct ResampleTaps {
  std::vector<std::uint32_t> first;
  std::vector<std::vector<std::int32_t>> weights;
};
ResampleTaps bicubic_taps(std::uint32_t in_size, std::uint32_t out_size);

}  // namespace tessera::models

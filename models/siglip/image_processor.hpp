#pragma once
// transformers' SiglipImageProcessor.preprocess with its defaults, for one
// image: resize to S × S with PIL's bicubic (models/resample.hpp; the aspect
// ratio is not kept), rescale by 1/255, normalise with mean 0.5 and std 0.5
// per channel, channels first. The arithmetic is numpy's: the rescale in
// float64 then cast to float32, the normalisation in float32 — so the values
// are bit for bit those of `processor(images=PIL.Image.open(f).convert("RGB"))`.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "models/image.hpp"
#include "models/siglip/config.hpp"

namespace tessera::models::siglip {

// [3, S, S] float32 for S = image_size.
std::vector<float> preprocess(const Rgb8Image& image, std::uint32_t image_size);

// The pixel values of several image files, [B, 3, S, S] for the config's
// image size; InputError naming the file for an unreadable image, and for a
// config whose num_channels is not 3.
std::vector<float> pixel_values_from_files(std::span<const std::filesystem::path> files,
                                           const SiglipVisionConfig& config);

}  // namespace tessera::models::siglip

#pragma once
// What the `tessera siglip` subcommands share: progress lines, the pixel
// input (PIXELS.npy or image files), writing f32 outputs.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/command.hpp"
#include "models/siglip/config.hpp"
#include "models/siglip/reference.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::cli {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start);

// Progress ("siglip reference: encoder layer 3/27") on stderr's line when it
// is a terminal, silent otherwise (cli/progress.hpp). Also says, once, when
// OpenBLAS is on slow generic kernels it need not be. An empty step erases
// the line: call it before printing results to stdout.
models::siglip::Progress progress_to(Streams& io, std::string_view command, bool uses_blas = true);

// Pixel values f32 [B, C, S, S], as SiglipImageProcessor produces them.
struct Pixels {
  std::vector<float> values;
  std::uint32_t batch = 0;
};

// PIXELS.npy, checked against the config (shape, dtype, finite values).
Pixels read_pixels(const std::string& path, const models::siglip::SiglipVisionConfig& config);
// --pixels or --image (exactly one), as the reference and run commands take them.
Pixels read_pixels_or_images(const std::string* pixels_file, const std::vector<std::string>* images,
                             const models::siglip::SiglipVisionConfig& config);

void write_f32(const std::string& path, std::vector<std::uint64_t> shape,
               const std::vector<float>& values);

// What `reference` and `run` read: the model of --model DIR and its input
// (--pixels or --image). A model without a pooling head refuses -o, which
// would ask for its pooler_output.
struct ModelInput {
  models::siglip::SiglipModel model;
  Pixels pixels;
};
ModelInput load_model_input(const boost::program_options::variables_map& values,
                            const models::siglip::Progress& progress);

// Writes -o POOLED.npy (f32[B, H]) and --hidden HIDDEN.npy (f32[B, T, H])
// when they were asked for, saying so on `io.out`.
void write_outputs(const boost::program_options::variables_map& values,
                   const models::siglip::SiglipVisionConfig& config, std::uint32_t batch,
                   const std::vector<float>& pooled, const std::vector<float>& hidden, Streams& io);

}  // namespace tessera::cli

// Image decoding and SiglipImageProcessor's preprocessing against values
// derived by hand from PIL's algorithm (Resample.c) and numpy's arithmetic.
#include <gtest/gtest.h>

// clang-format off
#include <cstdio>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <fstream>

#include "models/image.hpp"
#include "models/resample.hpp"
#include "models/siglip/image_processor.hpp"
#include "support/error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models {
namespace {

using tessera::testing::ScratchDirectory;

// Downscaling 4 → 2 (scale 2): support 2·2 = 4, argument halved. Output 0 is
// centred at 1.0 and reads inputs 0..3 at distances −0.5, 0.5, 1.5, 2.5,
// i.e. cubic(−0.25), cubic(0.25), cubic(0.75), cubic(1.25) with a = −0.5:
//   cubic(0.25) = (1.5·0.25 − 2.5)·0.25² + 1 = 111/128
//   cubic(0.75) = (1.5·0.75 − 2.5)·0.75² + 1 = 29/128
//   cubic(1.25) = −0.5·(((1.25 − 5)·1.25 + 8)·1.25 − 4) = −9/128
// sum 242/128; normalised and scaled by 2^22: 111·2^22/242 = 1923833.65 →
// 1923834, 29·2^22/242 = 502623.2 → 502623, −9·2^22/242 = −155986.5 → −155987
// (half away from zero). Output 1 mirrors them.
TEST(Resample, DownscaleTapsAreHandDerived) {
  const ResampleTaps taps = bicubic_taps(4, 2);
  ASSERT_EQ(taps.first, (std::vector<std::uint32_t>{0, 0}));
  EXPECT_EQ(taps.weights[0], (std::vector<std::int32_t>{1923834, 1923834, 502623, -155987}));
  EXPECT_EQ(taps.weights[1], (std::vector<std::int32_t>{-155987, 502623, 1923834, 1923834}));
}

// Upscaling 2 → 4 (scale 0.5): support 2, centres 0.25, 0.75, 1.25, 1.75.
// Output 0: cubic(0.25) = 111/128, cubic(1.25) = −9/128, sum 102/128 →
// 111·2^22/102 = 4564389.6 → 4564390, −9·2^22/102 = −370085.6 → −370086.
// Output 1: cubic(−0.25), cubic(0.75): 111/140·2^22 = 3325483.9 → 3325484,
// 29/140·2^22 = 868820.1 → 868820.
TEST(Resample, UpscaleTapsAreHandDerived) {
  const ResampleTaps taps = bicubic_taps(2, 4);
  EXPECT_EQ(taps.weights[0], (std::vector<std::int32_t>{4564390, -370086}));
  EXPECT_EQ(taps.weights[1], (std::vector<std::int32_t>{3325484, 868820}));
  EXPECT_EQ(taps.weights[2], (std::vector<std::int32_t>{868820, 3325484}));
  EXPECT_EQ(taps.weights[3], (std::vector<std::int32_t>{-370086, 4564390}));
}

// Sums start at 2^21 and shift right by 22 (floor), clipped to [0, 255]:
// [0, 100, 200, 255] → (2^21 + 1923834·100 + 502623·200 − 155987·255) >> 22
// = 255228467 >> 22 = 60, and (2^21 + 502623·100 + 1923834·455) >> 22 = 221.
// [0, 0, 0, 255] gives 2^21 − 155987·255 < 0 → 0; [255, 255, 255, 0] gives
// 264.98 → 255.
TEST(Resample, RoundsAndClipsAsPil) {
  EXPECT_EQ(resize_bicubic(std::vector<std::uint8_t>{0, 100, 200, 255}, 4, 1, 1, 2, 1),
            (std::vector<std::uint8_t>{60, 221}));
  EXPECT_EQ(resize_bicubic(std::vector<std::uint8_t>{0, 0, 0, 255}, 4, 1, 1, 2, 1)[0], 0);
  EXPECT_EQ(resize_bicubic(std::vector<std::uint8_t>{255, 255, 255, 0}, 4, 1, 1, 2, 1)[0], 255);
}

// 2 × 2 → 4 × 4, horizontal pass first with 8-bit results, then vertical:
// rows [10, 200] → [0, 49, 161, 217] (the first sum, 2^21 + 4564390·10 −
// 370086·200, is negative) and [200, 10] → [217, 161, 49, 0]; then each
// column (e.g. (49, 161) → 39, 72, 138, 171) the same way.
TEST(Resample, TwoPassesWithAnEightBitIntermediate) {
  const std::vector<std::uint8_t> out =
      resize_bicubic(std::vector<std::uint8_t>{10, 200, 200, 10}, 2, 2, 1, 4, 4);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0, 39, 171, 236,   //
                                            45, 72, 138, 172,  //
                                            172, 138, 72, 45,  //
                                            236, 171, 39, 0}));
  // Channels are independent; an unchanged axis is copied.
  const std::vector<std::uint8_t> rgb = {0, 7, 9, 100, 7, 9, 200, 7, 9, 255, 7, 9};
  EXPECT_EQ(resize_bicubic(rgb, 4, 1, 3, 2, 1), (std::vector<std::uint8_t>{60, 7, 9, 221, 7, 9}));
  EXPECT_EQ(resize_bicubic(rgb, 4, 1, 3, 4, 1), rgb);
}

// numpy: float32(v · (1/255 in float64)), then (x − 0.5) / 0.5 in float32.
// 128/255 → float32 0x3F008081 = 0.5 + 32897·2^−24, minus 0.5 exactly, times
// 2: 32897·2^−23. 255 → 1.0 → 1; 0 → −1.
TEST(SiglipImageProcessor, RescalesAndNormalisesAsNumpy) {
  Rgb8Image image{1, 1, {128, 255, 0}};
  // A 1 × 1 image upscaled: every output has one tap of weight 2^22, so the
  // value is kept.
  const std::vector<float> values = siglip::preprocess(image, 3);
  ASSERT_EQ(values.size(), 27u);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(values[static_cast<std::size_t>(i)], 32897.0F * 0x1p-23F);
    EXPECT_EQ(values[static_cast<std::size_t>(9 + i)], 1.0F);
    EXPECT_EQ(values[static_cast<std::size_t>(18 + i)], -1.0F);
  }
}

// Channels first: [3, S, S], each plane the resized channel.
TEST(SiglipImageProcessor, ResizesEachChannelToTheModelsSize) {
  Rgb8Image image{4, 1, {0, 255, 0, 100, 255, 0, 200, 255, 0, 255, 255, 0}};
  const std::vector<float> values = siglip::preprocess(image, 2);
  // Red along x: [60, 221] (Resample.RoundsAndClipsAsPil), both rows (1 → 2
  // rows copies the row: one tap).
  const auto normalised = [](int v) {
    return (static_cast<float>(v * (1.0 / 255.0)) - 0.5F) / 0.5F;
  };
  EXPECT_EQ(values[0], normalised(60));
  EXPECT_EQ(values[1], normalised(221));
  EXPECT_EQ(values[2], normalised(60));
  EXPECT_EQ(values[3], normalised(221));
  EXPECT_EQ(values[4], 1.0F);
  EXPECT_EQ(values[8], -1.0F);
}

void write_png(const std::string& path, std::uint32_t width, std::uint32_t height,
               std::uint32_t format, const std::vector<std::uint8_t>& pixels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  ASSERT_NE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr), 0);
}

TEST(Image, DecodesPngAsPilConvertRgbDoes) {
  ScratchDirectory scratch;
  // RGB as is.
  write_png(scratch.path("rgb.png"), 2, 1, PNG_FORMAT_RGB, {1, 2, 3, 250, 251, 252});
  Rgb8Image image = read_image(scratch.path("rgb.png"));
  EXPECT_EQ(image.width, 2u);
  EXPECT_EQ(image.height, 1u);
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{1, 2, 3, 250, 251, 252}));
  // Grey replicated, alpha dropped (not composited).
  write_png(scratch.path("gray.png"), 1, 2, PNG_FORMAT_GA, {7, 0, 200, 128});
  image = read_image(scratch.path("gray.png"));
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{7, 7, 7, 200, 200, 200}));
  write_png(scratch.path("rgba.png"), 1, 1, PNG_FORMAT_RGBA, {10, 20, 30, 0});
  EXPECT_EQ(read_image(scratch.path("rgba.png")).pixels, (std::vector<std::uint8_t>{10, 20, 30}));
}

TEST(Image, DecodesJpeg) {
  ScratchDirectory scratch;
  const std::string path = scratch.path("flat.jpg");
  // A flat colour survives JPEG at quality 100 within one level.
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file);
  cinfo.image_width = 16;
  cinfo.image_height = 8;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<std::uint8_t> row(16 * 3);
  for (std::size_t i = 0; i < row.size(); i += 3) {
    row[i] = 200;
    row[i + 1] = 100;
    row[i + 2] = 50;
  }
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW pointer = row.data();
    jpeg_write_scanlines(&cinfo, &pointer, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(file);

  const Rgb8Image image = read_image(path);
  EXPECT_EQ(image.width, 16u);
  EXPECT_EQ(image.height, 8u);
  ASSERT_EQ(image.pixels.size(), 16u * 8u * 3u);
  for (std::size_t i = 0; i < image.pixels.size(); i += 3) {
    EXPECT_NEAR(image.pixels[i], 200, 1);
    EXPECT_NEAR(image.pixels[i + 1], 100, 1);
    EXPECT_NEAR(image.pixels[i + 2], 50, 1);
  }
}

TEST(Image, BadFilesAreErrorsNamingTheFile) {
  ScratchDirectory scratch;
  const std::string text = scratch.write("note.png", "not an image");
  try {
    (void)read_image(text);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), text + ": is neither a PNG nor a JPEG image");
  }
  write_png(scratch.path("cut.png"), 64, 64, PNG_FORMAT_RGB,
            std::vector<std::uint8_t>(64 * 64 * 3, 9));
  std::filesystem::resize_file(scratch.path("cut.png"), 60);
  try {
    (void)read_image(scratch.path("cut.png"));
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(scratch.path("cut.png") + ": PNG: "),
              std::string::npos)
        << error.what();
  }
  std::ofstream(scratch.path("cut.jpg"), std::ios::binary) << "\xFF\xD8\xFF\xE0garbage";
  EXPECT_THROW((void)read_image(scratch.path("cut.jpg")), InputError);
  EXPECT_THROW((void)read_image(scratch.path("absent.png")), IoError);
}

}  // namespace
}  // namespace tessera::models

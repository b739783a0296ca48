#include "models/image.hpp"

// clang-format off
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "models/input_file.hpp"
#include "support/error.hpp"

namespace tessera::models {
namespace {

// libpng and libjpeg report errors by longjmp. The decoders below are
// written so that no C++ object with a destructor lives in a frame a longjmp
// crosses: the output image belongs to the caller, and the message goes into
// a fixed buffer that becomes an exception only after the C code is done.
struct DecodeError {
  char message[256] = {};
};

void check_size(std::uint64_t width, std::uint64_t height, DecodeError& error) {
  if (width == 0 || height == 0 || width * height > kMaxImagePixels) {
    std::snprintf(error.message, sizeof(error.message),
                  "%llux%llu pixels: an image must have from 1 to %llu pixels",
                  static_cast<unsigned long long>(width), static_cast<unsigned long long>(height),
                  static_cast<unsigned long long>(kMaxImagePixels));
  }
}

// ---- PNG ----

struct PngSource {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t offset;
};

void png_read_from(png_structp png, png_bytep out, png_size_t count) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (count > source->size - source->offset) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, source->data + source->offset, count);
  source->offset += count;
}

void png_fail(png_structp png, png_const_charp message) {
  auto* error = static_cast<DecodeError*>(png_get_error_ptr(png));
  std::snprintf(error->message, sizeof(error->message), "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

// Returns false with error set on failure.
bool decode_png(const std::uint8_t* data, std::size_t size, Rgb8Image& image, DecodeError& error) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, png_fail, png_ignore_warning);
  if (png == nullptr) {
    std::snprintf(error.message, sizeof(error.message), "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  PngSource source{data, size, 0};
  // Row pointers into image.pixels, kept in a C array the longjmp cannot leak.
  png_bytep* volatile rows = nullptr;
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    std::free(rows);
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    if (error.message[0] == '\0')
      std::snprintf(error.message, sizeof(error.message), "libpng failed");
    return false;
  }
  png_set_read_fn(png, &source, png_read_from);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  check_size(width, height, error);
  if (error.message[0] != '\0') png_longjmp(png, 1);
  const int color = png_get_color_type(png, info);
  // PIL's convert("RGB"): samples as they are, no gamma, no transparency.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if ((color & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != std::size_t{width} * 3) {
    png_error(png, "unexpected row layout after conversion to RGB");
  }
  image.width = width;
  image.height = height;
  image.pixels.resize(std::size_t{width} * height * 3);  // bounded by check_size
  rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * height));
  if (rows == nullptr) png_error(png, "out of memory");
  for (png_uint_32 y = 0; y < height; ++y)
    rows[y] = image.pixels.data() + std::size_t{y} * width * 3;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  std::free(rows);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// ---- JPEG ----

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  DecodeError* error;
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(errors->error->message, sizeof(errors->error->message), "%s", text);
  std::longjmp(errors->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}

bool decode_jpeg(const std::uint8_t* data, std::size_t size, Rgb8Image& image, DecodeError& error) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpeg_fail;
  errors.manager.emit_message = jpeg_quiet;
  errors.error = &error;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(error.message, sizeof(error.message), "CMYK JPEGs are not supported");
    std::longjmp(errors.jump, 1);
  }
  check_size(cinfo.image_width, cinfo.image_height, error);
  if (error.message[0] != '\0') std::longjmp(errors.jump, 1);
  cinfo.out_color_space = JCS_RGB;  // grey is replicated, YCbCr converted
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    std::snprintf(error.message, sizeof(error.message), "did not decode to RGB");
    std::longjmp(errors.jump, 1);
  }
  image.width = cinfo.output_width;
  image.height = cinfo.output_height;
  image.pixels.resize(std::size_t{image.width} * image.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + std::size_t{cinfo.output_scanline} * image.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Rgb8Image decode_image(std::span<const std::uint8_t> bytes) {
  static constexpr std::uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Rgb8Image image;
  DecodeError error;
  if (bytes.size() >= sizeof(kPng) && std::memcmp(bytes.data(), kPng, sizeof(kPng)) == 0) {
    if (!decode_png(bytes.data(), bytes.size(), image, error)) {
      throw InputError(fmt::format("PNG: {}", error.message));
    }
    return image;
  }
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    if (!decode_jpeg(bytes.data(), bytes.size(), image, error)) {
      throw InputError(fmt::format("JPEG: {}", error.message));
    }
    return image;
  }
  throw InputError("is neither a PNG nor a JPEG image");
}

Rgb8Image read_image(const std::filesystem::path& path) {
  const InputFile file(path);
  if (file.size() > kMaxImageFileBytes) {
    throw InputError(fmt::format("{}: {} bytes is larger than the {}-byte limit for an image file",
                                 path.string(), file.size(), kMaxImageFileBytes));
  }
  const std::vector<std::uint8_t> bytes = file.read(0, file.size());
  return with_context(path.string(), [&] { return decode_image(bytes); });
}

}  // namespace tessera::models

// Properties: whatever bytes a user hands the models' readers — a
// SafeTensors file, a whole model directory, config.json, quantization.json —
// the answer is a result or a tessera::Error (InputError, IoError), never
// another exception, a crash or a read outside the file. Inputs are valid
// files with random bytes overwritten, inserted or cut off.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/checkpoint.hpp"
#include "models/safetensors.hpp"
#include "models/siglip/config.hpp"
#include "models/siglip/fit.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/weights.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models {
namespace {

using tessera::testing::ScratchDirectory;

struct Edit {
  std::size_t position;  // taken modulo the size
  std::uint8_t byte;
  bool insert;
};

// Applies the edits, then keeps the first `keep` bytes (modulo size + 1).
template <typename Bytes>
Bytes mutate(Bytes bytes, const std::vector<Edit>& edits, std::size_t keep) {
  for (const Edit& e : edits) {
    if (bytes.empty()) break;
    const std::size_t at = e.position % bytes.size();
    if (e.insert) {
      bytes.insert(bytes.begin() + static_cast<long>(at), static_cast<typename Bytes::value_type>(e.byte));
    } else {
      bytes[at] = static_cast<typename Bytes::value_type>(e.byte);
    }
  }
  bytes.resize(std::min(bytes.size(), keep % (bytes.size() + 1)));
  return bytes;
}

rc::Gen<Edit> edit_in(std::size_t span) {
  return rc::gen::build<Edit>(rc::gen::set(&Edit::position, rc::gen::inRange<std::size_t>(0, span)),
                              rc::gen::set(&Edit::byte, rc::gen::arbitrary<std::uint8_t>()),
                              rc::gen::set(&Edit::insert, rc::gen::arbitrary<bool>()));
}

// A whole tiny model's safetensors bytes and config text, made once.
struct TinyModel {
  ScratchDirectory scratch;
  std::filesystem::path dir = scratch.path("model");
  std::vector<std::uint8_t> safetensors;
  std::string config;
  std::string quantization;
  TinyModel() {
    siglip::testing::write_random_model(dir, siglip::testing::tiny_config(), 1);
    const std::string text = read_text_file(dir / "model.safetensors", 1 << 24);
    safetensors.assign(text.begin(), text.end());
    config = read_text_file(dir / "config.json", 1 << 20);
    auto weights = siglip::load_model(dir).weights;
    const auto record = siglip::quantizer::quantize(weights, std::nullopt, {siglip::quantizer::Algorithm::kNearest});
    siglip::quantizer::save_quantized_model(scratch.path("q"), config, weights, record);
    quantization = read_text_file(scratch.path("q") + "/quantization.json", 1 << 24);
  }
};

const TinyModel& tiny() {
  static const TinyModel model;
  return model;
}

template <typename Fn>
void only_tessera_errors(Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
    // a clear error: fine
  } catch (const std::exception& other) {
    RC_FAIL(std::string("not a tessera::Error: ") + other.what());
  }
}

RC_GTEST_PROP(ModelReadersNeverCrash, SafeTensorsHeader, ()) {
  const auto& bytes = tiny().safetensors;
  // Mostly in the length and the JSON header, where the structure is.
  const auto edits = *rc::gen::container<std::vector<Edit>>(
      *rc::gen::inRange<std::size_t>(1, 6), edit_in(std::min<std::size_t>(bytes.size(), 4096)));
  const auto keep = *rc::gen::oneOf(rc::gen::just(bytes.size() + 1),
                                    rc::gen::inRange<std::size_t>(0, bytes.size() + 1));
  const auto mutated = mutate(bytes, edits, keep);
  only_tessera_errors([&] {
    const SafeTensorsHeader header = parse_safetensors_header(mutated);
    for (const auto& [name, info] : header.tensors) {
      RC_ASSERT(header.data_offset + info.end <= mutated.size());
      RC_ASSERT(info.begin <= info.end);
    }
  });
}

RC_GTEST_PROP(ModelReadersNeverCrash, ModelDirectory, ()) {
  const auto& bytes = tiny().safetensors;
  const auto edits = *rc::gen::container<std::vector<Edit>>(
      *rc::gen::inRange<std::size_t>(1, 4), edit_in(std::min<std::size_t>(bytes.size(), 4096)));
  const auto keep = *rc::gen::oneOf(rc::gen::just(bytes.size() + 1),
                                    rc::gen::inRange<std::size_t>(0, bytes.size() + 1));
  const auto mutated = mutate(bytes, edits, keep);
  ScratchDirectory scratch;
  const std::filesystem::path dir = scratch.path("m");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << tiny().config;
  std::ofstream(dir / "model.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(mutated.data()), static_cast<std::streamsize>(mutated.size()));
  only_tessera_errors([&] { (void)siglip::load_model(dir); });
}

RC_GTEST_PROP(ModelReadersNeverCrash, ConfigJson, ()) {
  const std::string& text = tiny().config;
  // Digits and JSON punctuation make the interesting configs.
  const auto edits = *rc::gen::container<std::vector<Edit>>(
      *rc::gen::inRange<std::size_t>(1, 5),
      rc::gen::build<Edit>(
          rc::gen::set(&Edit::position, rc::gen::inRange<std::size_t>(0, text.size())),
          rc::gen::set(&Edit::byte, rc::gen::elementOf(std::string("0123456789-.e{}[]\",:tnfx "))),
          rc::gen::set(&Edit::insert, rc::gen::arbitrary<bool>())));
  const auto mutated = mutate(text, edits, text.size() + 1);
  only_tessera_errors([&] {
    const siglip::SiglipVisionConfig config = siglip::parse_siglip_config(mutated);
    siglip::validate(config);  // what parses is valid
    (void)siglip::parameter_count(config);
    // The fit check reads nothing but the config.
    (void)siglip::precision_that_fits(config, 1472);
  });
}

RC_GTEST_PROP(ModelReadersNeverCrash, QuantizationJson, ()) {
  const std::string& text = tiny().quantization;
  const auto edits = *rc::gen::container<std::vector<Edit>>(
      *rc::gen::inRange<std::size_t>(1, 4),
      rc::gen::build<Edit>(
          rc::gen::set(&Edit::position, rc::gen::inRange<std::size_t>(0, text.size())),
          rc::gen::set(&Edit::byte, rc::gen::elementOf(std::string("0123456789-.e{}[]\",:n "))),
          rc::gen::set(&Edit::insert, rc::gen::arbitrary<bool>())));
  const auto mutated = mutate(text, edits, text.size() + 1);
  static const siglip::SiglipVisionWeights weights =
      siglip::load_model(tiny().scratch.path("q")).weights;
  ScratchDirectory scratch;
  std::ofstream(scratch.path("quantization.json")) << mutated;
  only_tessera_errors([&] { (void)siglip::quantizer::read_quantization(scratch.path(""), weights); });
}

}  // namespace
}  // namespace tessera::models

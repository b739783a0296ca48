#include "models/checkpoint.hpp"

#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/strict_json.hpp"
#include "support/error.hpp"

namespace tessera::models {
namespace {

using nlohmann::json;

// A shard is a file next to the index, named plainly.
void check_shard_name(const std::string& name) {
  const std::filesystem::path path(name);
  if (name.empty() || path.has_parent_path() || path.is_absolute() || name == "." || name == "..") {
    throw InputError(
        fmt::format("shard '{}' is not a plain file name in the model directory", name));
  }
}

Checkpoint::Tensor lookup(const SafeTensorsFile& file, std::string_view name) {
  const SafeTensorInfo* info = file.find(name);
  return info == nullptr ? Checkpoint::Tensor{} : Checkpoint::Tensor{&file, info};
}

}  // namespace

bool path_exists(const std::filesystem::path& path) {
  std::error_code error;
  const bool exists = std::filesystem::exists(path, error);
  if (error) throw IoError(fmt::format("{}: cannot look it up: {}", path.string(), error.message()));
  return exists;
}

std::string read_text_file(const std::filesystem::path& path, std::uintmax_t limit) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw IoError(fmt::format("{}: cannot read: {}", path.string(), error.message()));
  if (size > limit) {
    throw InputError(
        path.string(),
        fmt::format("is {} bytes, more than the {} such a file may have", size, limit));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open", path.string()));
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) {
    throw IoError(fmt::format("{}: cannot read all {} bytes", path.string(), size));
  }
  return text;
}

Checkpoint Checkpoint::open(const std::filesystem::path& directory) {
  Checkpoint checkpoint;
  const auto single = directory / kSafeTensorsFile;
  const auto index = directory / kSafeTensorsIndexFile;
  if (path_exists(single)) {
    checkpoint.files_.push_back(std::make_unique<SafeTensorsFile>(single));
    for (const auto& [name, info] : checkpoint.files_.front()->tensors()) {
      checkpoint.tensors_.emplace(name, Tensor{checkpoint.files_.front().get(), &info});
    }
    return checkpoint;
  }
  if (!path_exists(index)) {
    throw IoError(fmt::format("{}: no {} or {} (a Hugging Face model directory holds one)",
                              directory.string(), kSafeTensorsFile, kSafeTensorsIndexFile));
  }
  const std::string text = read_text_file(index, kMaxIndexBytes);  // its errors name the file
  with_context(index.string(), [&] {
    // Strict: a tensor named twice in weight_map would otherwise silently
    // come from whichever shard the parser kept.
    const json root = parse_strict_json(text, kMaxIndexDepth);
    if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
      throw InputError("weight_map", "is missing or not an object of tensor name: shard file");
    }
    std::map<std::string, const SafeTensorsFile*> shards;
    for (const auto& [name, shard] : root["weight_map"].items()) {
      if (!shard.is_string()) throw InputError("weight_map." + name, "must be a shard file name");
      const auto& shard_name = shard.get_ref<const std::string&>();
      with_context("weight_map." + name, [&] { check_shard_name(shard_name); });
      if (!shards.contains(shard_name)) {
        const auto path = directory / shard_name;
        if (!path_exists(path)) {
          throw InputError("weight_map." + name,
                           fmt::format("names the shard {}, which does not exist", shard_name));
        }
        checkpoint.files_.push_back(std::make_unique<SafeTensorsFile>(path));
        shards.emplace(shard_name, checkpoint.files_.back().get());
      }
      const Tensor tensor = lookup(*shards.at(shard_name), name);
      if (tensor.info == nullptr) {
        throw InputError("weight_map." + name,
                         fmt::format("the shard {} has no tensor of that name", shard_name));
      }
      checkpoint.tensors_.emplace(name, tensor);
    }
  });
  return checkpoint;
}

Checkpoint::Tensor Checkpoint::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? Tensor{} : it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors_) names.push_back(name);
  return names;
}

}  // namespace tessera::models

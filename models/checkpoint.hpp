#pragma once
// A Hugging Face model directory's weights: `model.safetensors`, or the
// shards a `model.safetensors.index.json` lists ({"metadata": {...},
// "weight_map": {tensor name: shard file name}}), as `save_pretrained`
// writes them. Every shard the index names is opened and validated when the
// checkpoint is opened; a shard name that is not a plain file name in the
// directory ("../x", "/etc/x") is refused, and so is a weight_map entry whose
// shard does not hold that tensor.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/safetensors.hpp"

namespace tessera::models {

inline constexpr std::string_view kSafeTensorsFile = "model.safetensors";
inline constexpr std::string_view kSafeTensorsIndexFile = "model.safetensors.index.json";
// An index is a small JSON file; anything larger is not one.
inline constexpr std::uintmax_t kMaxIndexBytes = 64u << 20;
// {"metadata": {…}, "weight_map": {name: shard}}: two levels, with room to spare.
inline constexpr int kMaxIndexDepth = 4;

class Checkpoint {
 public:
  // Opens DIRECTORY/model.safetensors, or else the sharded index; InputError
  // or IoError naming the file otherwise.
  static Checkpoint open(const std::filesystem::path& directory);

  struct Tensor {
    const SafeTensorsFile* file = nullptr;
    const SafeTensorInfo* info = nullptr;
  };
  // nullptr file and info when the checkpoint has no such tensor.
  Tensor find(std::string_view name) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  // The files, in the order opened (one unless sharded).
  const std::vector<std::unique_ptr<SafeTensorsFile>>& files() const noexcept { return files_; }

 private:
  std::vector<std::unique_ptr<SafeTensorsFile>> files_;
  std::map<std::string, Tensor, std::less<>> tensors_;
};

// Whether `path` exists; IoError naming it when the OS cannot tell (a
// directory that may not be searched), never std::filesystem's exception.
bool path_exists(const std::filesystem::path& path);

// The whole of a small text file (config.json, an index), refusing one larger
// than `limit` bytes before reading it.
std::string read_text_file(const std::filesystem::path& path, std::uintmax_t limit);

}  // namespace tessera::models

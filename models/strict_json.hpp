#pragma once
// JSON from a user's file, parsed strictly: a key that appears twice in one
// object is an error (a plain nlohmann parse silently keeps the last one, so
// two tensors or two config values could hide behind one name), and nesting
// deeper than the format needs is refused before it costs memory or stack.
// Used for the SafeTensors header, the shard index and config.json.

#include <nlohmann/json.hpp>
#include <string_view>

namespace tessera::models {

// InputError "the key 'k' appears twice", "nests deeper than N levels" or
// "is not valid JSON: …"; callers add the file and field context.
nlohmann::json parse_strict_json(std::string_view text, int max_depth);

}  // namespace tessera::models

#include "models/strict_json.hpp"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "support/error.hpp"

namespace tessera::models {

using json = nlohmann::json;

json parse_strict_json(std::string_view text, int max_depth) {
  std::vector<std::set<std::string>> keys;  // per open object, the keys seen so far
  int depth = 0;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > max_depth) {
          throw InputError(fmt::format("nests deeper than {} levels", max_depth));
        }
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        --depth;
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second) {
          throw InputError(fmt::format("the key '{}' appears twice", parsed.get<std::string>()));
        }
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& error) {
    throw InputError(fmt::format("is not valid JSON: {}", error.what()));
  }
}

}  // namespace tessera::models

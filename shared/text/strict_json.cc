#include "shared/text/strict_json.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace corral::text {
namespace {

using nlohmann::json;

// Where the parser is: one frame per open object or array, for the path of a repeated key.
struct Frame {
  bool object;
  std::set<std::string> keys;  // objects: the keys seen so far
  std::string key;             // objects: the key of the value being read
  size_t index = 0;            // arrays: the element being read
};

struct RepeatedKey {
  std::string message;
};

std::string path_of(const std::vector<Frame>& frames) {
  std::string path;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {  // the innermost frame is the object itself
    const Frame& f = frames[i];
    if (f.object) {
      path += (path.empty() ? "" : ".") + f.key;
    } else {
      path += "[" + std::to_string(f.index) + "]";
    }
  }
  return path;
}

// After a value ends: the array it was in moves to its next element.
void next_element(std::vector<Frame>& frames) {
  if (!frames.empty() && !frames.back().object) ++frames.back().index;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 3, column 5: ..." without
// the bracketed id, which means nothing to a person editing the file.
std::string describe(const json::parse_error& e) {
  std::string what = e.what();
  size_t at = what.find("parse error at ");
  if (at == std::string::npos) return what;
  return what.substr(at + std::strlen("parse error at "));
}

}  // namespace

Result<json> parse_strict_json(std::string_view text) {
  std::vector<Frame> frames;
  auto watch = [&frames](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames.push_back({true, {}, {}, 0});
        break;
      case json::parse_event_t::array_start:
        frames.push_back({false, {}, {}, 0});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          std::string where = path_of(frames);
          throw RepeatedKey{(where.empty() ? "" : where + ": ") + "the key \"" + f.key +
                            "\" appears twice"};
        }
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames.pop_back();
        next_element(frames);
        break;
      case json::parse_event_t::value:
        next_element(frames);
        break;
    }
    return true;
  };
  try {
    return json::parse(text, watch);
  } catch (const RepeatedKey& r) {
    return invalid_argument(r.message);
  } catch (const json::parse_error& e) {
    return invalid_argument(describe(e));
  }
}

}  // namespace corral::text

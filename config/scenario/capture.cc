// Taking captured values out of a response.
#include "config/scenario/capture.h"

#include "config/scenario/condition.h"

namespace corral::scenario {
namespace {

Status not_found(const Capture& c, const std::string& what) {
  return {Code::kNotFound, "capture " + nlohmann::json(c.name).dump() + ": " + what};
}

}  // namespace

Result<nlohmann::json> capture(const Capture& c, const ResponseView& response) {
  switch (c.source) {
    case Capture::Source::kJson: {
      std::string where = c.pointer.empty() ? "the body" : c.pointer.to_string();
      if (!response.json) return not_found(c, where + " not found: the response body is not JSON");
      const nlohmann::json* value = resolve(*response.json, c.pointer);
      if (!value) return not_found(c, where + " not found in response body");
      return *value;
    }
    case Capture::Source::kHeader: {
      std::optional<std::string_view> value = response.header(c.header);
      if (!value) return not_found(c, "header " + c.header + " not found in response");
      return nlohmann::json(std::string(*value));
    }
    case Capture::Source::kStatus:
      return nlohmann::json(response.status);
    case Capture::Source::kBody:
      return nlohmann::json(std::string(response.body));
  }
  return Status(Code::kInternal, "capture " + c.name + ": unknown source");
}

}  // namespace corral::scenario

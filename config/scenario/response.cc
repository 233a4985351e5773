// Response lookups and value formatting for messages.
#include "config/scenario/response.h"

#include "shared/http/message.h"

#include <cctype>

namespace corral::scenario {

bool equals_ignoring_case(std::string_view a, std::string_view b) { return http::iequals(a, b); }

std::optional<std::string_view> ResponseView::header(std::string_view name) const {
  for (const Header& h : headers) {
    if (equals_ignoring_case(h.first, name)) return std::string_view(h.second);
  }
  return std::nullopt;
}

std::string describe_value(const nlohmann::json& value, size_t max_chars) {
  // Response data may hold invalid UTF-8: replace it rather than throw.
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= max_chars) return text;
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return text.substr(0, cut) + "...";
}

}  // namespace corral::scenario

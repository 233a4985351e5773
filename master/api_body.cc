#include "master/api_body.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "config/fields.h"
#include "shared/text/strict_json.h"

namespace corral::master {

std::optional<std::string> unknown_field(const nlohmann::json& body,
                                         std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : body.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::vector<std::string_view> names(known);
    return config::unknown_name("field", key, names);
  }
  return std::nullopt;
}

std::optional<nlohmann::json> json_body(const http::Request& req, const http::Responder& respond,
                                        std::initializer_list<std::string_view> known) {
  if (req.body.empty()) return nlohmann::json::object();
  auto j = text::parse_strict_json(req.body);
  if (!j) {
    respond.send(http::Response::error(400, "request body: " + j.status().message()));
    return std::nullopt;
  }
  if (!j->is_object()) {
    respond.send(http::Response::error(400, "request body must be a JSON object"));
    return std::nullopt;
  }
  if (auto unknown = unknown_field(*j, known)) {
    respond.send(http::Response::error(400, *unknown));
    return std::nullopt;
  }
  return std::move(*j);
}

std::optional<nlohmann::json> submission_body(const ApiCall& c, bool stopping, const char* what,
                                              std::initializer_list<std::string_view> known) {
  auto body = json_body(c.req, c.respond, known);
  if (!body) return std::nullopt;
  if (stopping) {
    c.respond.send(http::Response::error(
        503, std::string("the daemon is stopping; ") + what + " are not accepted"));
    return std::nullopt;
  }
  return body;
}

// tls.verify false is meant for a throwaway test host: said once per run, so that it is not
// left on by mistake.
void warn_unverified(std::string_view what, const std::string& id,
                     const std::vector<std::string>& steps) {
  if (steps.empty()) return;
  std::string names;
  for (const std::string& n : steps) names += (names.empty() ? "\"" : ", \"") + n + "\"";
  spdlog::warn("{} {}: tls.verify is false for step {}: the server's certificate is not checked",
               what, id, names);
}

}  // namespace corral::master

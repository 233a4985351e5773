// What every API route with a JSON body checks before it reads the body's fields: the body is
// strict JSON (shared/text/strict_json.h: a repeated key is refused) and holds only the fields
// the route knows, so that a misspelt one (`"instance": 3`) is refused instead of silently
// taking its default.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/api_route.h"
#include "shared/http/server.h"

namespace corral::master {

// The error for the first field of the object `body` that is not in `known`:
// `unknown field "instance" (did you mean "instances"?); known fields: scenario, instances, ...`;
// nullopt when every field is known.
std::optional<std::string> unknown_field(const nlohmann::json& body,
                                         std::initializer_list<std::string_view> known);

// The request's body as a JSON object with only `known` fields; an empty body is {}. Otherwise
// answers 400 saying what is wrong (a repeated key, where the syntax breaks, an unknown field)
// and returns nullopt.
std::optional<nlohmann::json> json_body(const http::Request& req, const http::Responder& respond,
                                        std::initializer_list<std::string_view> known);

// The body of a submission (a run, a load test, a schedule) with only the `known` fields; answers
// 400, or 503 while the daemon is `stopping` (`what` names the submissions: "runs"), and returns
// nullopt otherwise.
std::optional<nlohmann::json> submission_body(const ApiCall& c, bool stopping, const char* what,
                                              std::initializer_list<std::string_view> known);

// Logs once that steps `steps` of run or load test `id` (`what`: "run", "load") do not verify
// the server's certificate.
void warn_unverified(std::string_view what, const std::string& id,
                     const std::vector<std::string>& steps);

}  // namespace corral::master

// Captures: values taken from a response into an instance's variables for later steps.
//
// Scenario form, under a step's "capture" (variable name -> source):
//   {"job": {"json": "/id"}}        the JSON value at a pointer (any type)
//   {"loc": {"header": "Location"}} a header's text (name case-insensitive)
//   {"code": {"status": true}}      the status code (a number)
//   {"raw": {"body": true}}         the whole body as a string
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/scenario/response.h"
#include "shared/status.h"

namespace corral::scenario {

struct Capture {
  enum class Source { kJson, kHeader, kStatus, kBody };
  std::string name;  // the variable it sets
  Source source = Source::kJson;
  nlohmann::json::json_pointer pointer;  // kJson
  std::string header;                    // kHeader
};

// The captured value. A capture that finds nothing fails with kNotFound and a message naming
// the variable and what it looked for: `capture "job": /id not found in response body`,
// `capture "job": /id not found: the response body is not JSON`,
// `capture "loc": header Location not found in response`.
Result<nlohmann::json> capture(const Capture& capture, const ResponseView& response);

}  // namespace corral::scenario

// The table of config-file fields: the one place that says which settings a config file may
// hold, of what kind, in what range. apply_json, to_json, validate and field_reference all
// walk it. Internal to config/; other folders use config.h.
//
// Adding a setting: add the member to Config (config.h), then one row to kFields (fields.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"

namespace corral::config {

enum class Kind {
  kInt,       // JSON integer
  kDouble,    // JSON number
  kString,    // JSON string, optionally one of `choices`
  kDuration,  // "250ms", "10s", ... stored as milliseconds
  kBytes,     // "512MB" or a JSON integer, stored as bytes
  kHooks,     // the `hooks` object (config/hooks.h)
  kLimits,    // the `limits` object (config/limits.h)
  kTls,       // a `tls` object (shared/http/tls_options.h)
};

std::string_view kind_name(Kind kind);

using Member = std::variant<int Config::*, double Config::*, std::string Config::*,
                            uint64_t Config::*, Hooks Config::*, TargetLimits Config::*,
                            http::TlsOptions Config::*>;

struct Field {
  std::string_view name;  // as written in a config file
  Kind kind;
  Member member;  // the variant alternative always matches `kind` (see the makers)
  double min;     // inclusive range for the numeric kinds
  double max;
  std::span<const std::string_view> choices;  // kString only; empty = any string
  std::string_view help;
};

// Every field, in the order they are documented and listed in error messages.
std::span<const Field> fields();

// The field named `name`, or nullptr.
const Field* find_field(std::string_view name);

// The field a misspelt `name` most likely meant, for "did you mean" in errors; nullptr when none
// is close (see closest_name).
const Field* closest_field(std::string_view name);

// The entry of `names` a misspelt `name` most likely meant; nullptr when none is close. Close
// is an edit distance of at most 2, or one name containing the other when the shorter has at
// least 3 characters ("max_memory_bytes" -> "max_memory"). Of several, the nearest by edit
// distance, then the first in `names`.
const std::string_view* closest_name(std::string_view name,
                                     std::span<const std::string_view> names);

// The error for a name that is not one of `names`, `what` being "field" or "event":
// `unknown field "wokers" (did you mean "workers"?); known fields: workers, listen, ...`, or
// `unknown field "x" (known fields: workers, listen, ...)` when no name is close.
std::string unknown_name(std::string_view what, std::string_view name,
                         std::span<const std::string_view> names);

// The names of fields(), in the same order.
std::span<const std::string_view> field_names();

// The Levenshtein distance: the fewest one-character insertions, deletions and substitutions
// that turn `a` into `b`. Bytes, not code points (field names are ASCII).
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace corral::config

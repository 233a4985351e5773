// Internal to the scenario parser (parse_*.cc) and the step kinds' parse.cc (steps/*/): field
// readers and the parts of a step.
//
// The readers throw ParseError with the full message (`<path>: <what>`); parse_scenario()
// catches it and returns it as a Status, so no exception leaves the parser. Throwing keeps
// each reader a one-liner at its call site, which matters in code that is mostly checks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/scenario/model.h"
#include "config/scenario/parse.h"

namespace corral::scenario::detail {

using nlohmann::json;

struct ParseError {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& what);

// "steps[0]" + "request" -> "steps[0].request"; "" + "name" -> "name".
std::string field_path(const std::string& path, std::string_view name);
// "steps" + 2 -> "steps[2]".
std::string element_path(const std::string& path, size_t index);
// Whether `text` begins with `prefix`, ASCII case ignored ("HTTP://" begins with "http://").
bool starts_with_ignoring_case(std::string_view text, std::string_view prefix);
// `value` as JSON text for "got ..." in messages.
std::string shown(const json& value);
// `s` without leading and trailing white space.
std::string_view trim(std::string_view s);

// What a template may use at some point of the file: the variables defined so far, and the
// submission's checks of environment variables and secrets.
struct Scope {
  std::set<std::string, std::less<>> vars;
  const ParseOptions* options = nullptr;
  // Where a template used {{callback_url}} since the last callback step: a callback step must
  // follow (parse_document checks at the end; the callback kind clears it).
  mutable std::string callback_url_at;
  // The scenario's steps so far, flat (Scenario::steps): a kind that holds steps (parallel)
  // adds its branches' steps here through parse_steps().
  std::vector<Step>* steps = nullptr;
  // The variables the steps parsed in this scope captured (a parallel step's branch exports
  // them after the join as "<branch>.<name>").
  std::set<std::string, std::less<>> captured;
  // The parallel branch being parsed, as Step::branch names it; "" for the scenario's steps.
  std::string branch;
  bool contains(std::string_view name) const { return vars.contains(name); }
  void insert(std::string name) { vars.insert(name), captured.insert(std::move(name)); }
};

// Parses `list` (at `path`: a non-empty array of steps) into scope.steps as one run of
// consecutive indices, each step's list_end set to the end of that run and its branch to
// scope.branch; returns the first index. Each step's captures are added to `scope`.
size_t parse_steps(const json& list, const std::string& path, Scope& scope);

// ` (did you mean "base"?)` for a misspelt `name`, when one of `known` is close; "" otherwise.
std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& known);
// Fails unless `j` is an object whose keys are all in `known`:
// `steps[0].requst: unknown field (did you mean "request"?) (known: name, request, ...)`.
void check_fields(const json& j, const std::string& path,
                  std::initializer_list<std::string_view> known);
void check_fields(const json& j, const std::string& path,
                  const std::vector<std::string_view>& known);
// `j[name]`, failing with `<path>.<name>: missing, expected <expected>` when absent.
const json& required(const json& j, const std::string& path, std::string_view name,
                     std::string_view expected);

std::string read_string(const json& j, const std::string& path);  // non-empty
// A "tls" object (shared/http/tls_options.h); its files are checked when the scope's options
// say so.
http::TlsOptions read_tls(const json& j, const std::string& path, const Scope& scope);
// "auto", "1.1" or "2".
http::HttpVersion read_http_version(const json& j, const std::string& path);
uint64_t read_duration(const json& j, const std::string& path);  // "250ms", "10s", "10m"
uint64_t read_positive_duration(const json& j, const std::string& path);
int read_int(const json& j, const std::string& path, int min, int max);
bool read_bool(const json& j, const std::string& path);
// "64MB" or a positive integer of bytes, at most `max`.
uint64_t read_size(const json& j, const std::string& path, uint64_t max);
// The largest `max_response` a request or the daemon may set.
constexpr uint64_t kMaxResponseLimit = uint64_t{1} << 30;
double read_number(const json& j, const std::string& path, double min, double max);
json::json_pointer read_pointer(const json& j, const std::string& path);
// Fails at the first array or object nested deeper than kMaxNesting levels. Iterative, so it
// is safe on any document; call it before anything that recurses (dump, copy, ==).
void check_nesting(const json& doc);
// A name usable as a variable: letters, digits and "_", not a built-in.
std::string check_variable_name(const std::string& name, const std::string& path);
// Compiles a template and checks that every variable it uses is in `scope`.
Template read_template(const json& j, const std::string& path, const Scope& scope);
void check_scope(const Template& t, const std::string& path, const Scope& scope);

// A "headers" object: names checked (RFC 9110 tokens), values templates without line breaks.
std::vector<std::pair<std::string, Template>> read_headers(const json& j, const std::string& path,
                                                           const Scope& scope);
// A JSON document whose strings may be templates ("json" of a request or a ws_send).
JsonTemplate read_json_body(const json& j, const std::string& path, const Scope& scope);

// The parts of a step, each reading the field at `path`.
RequestSpec parse_request(const json& j, const std::string& path, const Scope& scope);
std::vector<Condition> parse_conditions(const json& j, const std::string& path, bool non_empty);
std::vector<Capture> parse_captures(const json& j, const std::string& path);
// Whether a condition among `conditions` reads the body as JSON.
bool any_json(const std::vector<Condition>& conditions);

}  // namespace corral::scenario::detail

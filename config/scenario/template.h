// Templates: `{{var}}` references in a request's url, header values and body.
//
// A template is compiled once, when the scenario is parsed, into literal and variable segments,
// so expanding it for each request is one pass of concatenation. Names inside the braces may be
// padded with spaces (`{{ base }}`), and a name may have dotted parts (`{{eu.job}}`: what branch
// "eu" of a parallel step captured as "job"). Besides the scenario's own variables (vars, run-time vars,
// captures) six built-ins exist:
//   {{instance}}     the instance number (a JSON number)
//   {{run}}          the run id
//   {{uuid}}         a fresh random version-4 UUID at every expansion
//   {{env.NAME}}     the environment variable NAME of the process that expands (the worker)
//   {{secret.NAME}}  the secret NAME (shared/secrets.h): its value is masked wherever it
//                    would leave the worker
//   {{callback_url}} the URL that completes the instance's next callback step (steps/callback)
// A string variable expands to its text, whatever its bytes; any other JSON value to its
// compact JSON text. In a JSON body every text must be UTF-8: see JsonTemplate::expand.
//
// Compiled templates are immutable and may be expanded from any thread at once.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/status.h"

namespace corral::scenario {

// The names a user variable may not take: they are built-ins ("env" for `{{env.NAME}}`).
bool is_builtin_name(std::string_view name);

// What templates read at expansion time. The engine implements it over one instance.
class Vars {
 public:
  virtual ~Vars() = default;
  // The value of a user variable (scenario vars, run-time vars, captures), or null if none.
  // The pointer must stay valid until the expansion that asked returns.
  virtual const nlohmann::json* find(std::string_view name) const = 0;
  virtual uint64_t instance() const = 0;
  virtual std::string_view run() const = 0;
  // The value of secret `name`, or nullptr when there is no such secret.
  virtual const std::string* secret(std::string_view) const { return nullptr; }
  // The URL of the instance's next callback step; "" when none follows.
  virtual std::string callback_url() const { return ""; }
};

// Vars over a JSON object of variables. Borrows `values`, which must outlive it.
class JsonVars final : public Vars {
 public:
  JsonVars(const nlohmann::json& values, uint64_t instance, std::string run)
      : values_(values), instance_(instance), run_(std::move(run)) {}
  const nlohmann::json* find(std::string_view name) const override;
  uint64_t instance() const override { return instance_; }
  std::string_view run() const override { return run_; }

 private:
  const nlohmann::json& values_;
  uint64_t instance_;
  std::string run_;
};

class Template {
 public:
  enum class Kind { kLiteral, kVariable, kInstance, kRun, kUuid, kEnv, kSecret, kCallbackUrl };
  struct Segment {
    Kind kind;
    std::string text;  // the literal, or the name of the variable, environment variable or secret
  };

  Template() = default;  // expands to ""

  // Compiles `text`. Errors (kInvalidArgument, the message without a field path):
  // `unclosed "{{" in "..."`, `invalid variable reference "{{a b}}" in "..."`.
  static Result<Template> compile(std::string_view text);

  // The text with every reference replaced. A user variable `vars` does not know, an unset
  // environment variable or an unknown secret expands to "" and sets *error (if given) to
  // kNotFound naming it; validation at parse time makes these impossible for scenario
  // variables, and unlikely for the others (the environment may change between submission
  // and a restart).
  std::string expand(const Vars& vars, Status* error = nullptr) const;

  // As expand(), but a template that is exactly one reference keeps that value's JSON type
  // (`"{{count}}"` with count = 3 gives the number 3, `{{instance}}` a number).
  nlohmann::json expand_json(const Vars& vars, Status* error = nullptr) const;

  // The names referenced of one kind (kVariable: user variables; kEnv; kSecret), in order
  // of appearance.
  std::vector<std::string> names(Kind kind) const;
  std::vector<std::string> variables() const { return names(Kind::kVariable); }

  const std::string& source() const { return source_; }
  const std::vector<Segment>& segments() const { return segments_; }
  bool is_literal() const;

 private:
  std::string source_;
  std::vector<Segment> segments_;
};

// A JSON body whose strings (not object keys) may hold templates. Compiled once; expansion
// copies the document and fills in only the strings that had references.
class JsonTemplate {
 public:
  struct Slot {
    nlohmann::json::json_pointer where;
    std::string path;  // for messages: ".user.name", "[2]"
    Template value;
  };

  JsonTemplate() = default;
  // Errors as Template::compile, prefixed with the path inside the document: `.user.name: ...`.
  static Result<JsonTemplate> compile(const nlohmann::json& doc);

  // The document with every templated string expanded by Template::expand_json. A text that
  // is not UTF-8 cannot go into JSON: it sets *error (kInvalidArgument) naming the variable,
  // `variable "raw" in .note is not UTF-8 text (send bytes with "body")`, and is left out.
  nlohmann::json expand(const Vars& vars, Status* error = nullptr) const;

  const nlohmann::json& source() const { return doc_; }
  const std::vector<Slot>& slots() const { return slots_; }

 private:
  nlohmann::json doc_;
  std::vector<Slot> slots_;
};

// A random version-4 UUID in its 36-character lowercase form.
std::string make_uuid();

}  // namespace corral::scenario

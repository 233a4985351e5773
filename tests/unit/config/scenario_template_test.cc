// Templates: compilation into segments and expansion with variables and built-ins.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <regex>
#include <set>

#include "config/scenario/template.h"

namespace corral::scenario {
namespace {

using nlohmann::json;

Template compile(const std::string& text) {
  Result<Template> t = Template::compile(text);
  INFO((t ? "" : t.status().message()));
  REQUIRE(t.is_ok());
  return *t;
}

const json kVars = {{"base", "http://h:1"}, {"job", "j-7"}, {"n", 3},
                    {"obj", {{"a", 1}}},    {"flag", true}, {"empty", ""}};

TEST_CASE("scenario templates: expand variables as text") {
  struct Case {
    const char* text;
    const char* expanded;
  };
  const Case cases[] = {
      {"no references", "no references"},
      {"", ""},
      {"{{base}}/jobs/{{job}}", "http://h:1/jobs/j-7"},
      {"{{ base }}/{{  job}}", "http://h:1/j-7"},
      {"n={{n}}&o={{obj}}&f={{flag}}", "n=3&o={\"a\":1}&f=true"},
      {"[{{empty}}]", "[]"},
      {"i={{instance}} r={{run}}", "i=42 r=run-1"},
      {"a } b }} c {", "a } b }} c {"},
      {"{{job}}{{job}}", "j-7j-7"},
  };
  JsonVars vars(kVars, 42, "run-1");
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Status error;
    CHECK(compile(c.text).expand(vars, &error) == c.expanded);
    CHECK(error.is_ok());
  }
}

TEST_CASE("scenario templates: compile into literal and variable segments") {
  Template t = compile("{{base}}/jobs/{{job}}?x={{uuid}}{{env.HOME}}");
  using K = Template::Kind;
  REQUIRE(t.segments().size() == 6);
  CHECK(t.segments()[0].kind == K::kVariable);
  CHECK(t.segments()[1].kind == K::kLiteral);
  CHECK(t.segments()[1].text == "/jobs/");
  CHECK(t.segments()[4].kind == K::kUuid);
  CHECK(t.segments()[5].kind == K::kEnv);
  CHECK(t.segments()[5].text == "HOME");
  CHECK(t.variables() == std::vector<std::string>{"base", "job"});
  CHECK_FALSE(t.is_literal());
  CHECK(compile("plain").is_literal());
}

TEST_CASE("scenario templates: reject unclosed and malformed references") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"x{{a", R"(unclosed "{{" in "x{{a")"},
      {"{{}}", R"(invalid variable reference "{{}}" in "{{}}")"},
      {"{{a b}}", R"(invalid variable reference "{{a b}}" in "{{a b}}")"},
      {"{{1a}}", R"(invalid variable reference "{{1a}}" in "{{1a}}")"},
      {"{{env}}", R"(invalid variable reference "{{env}}" in "{{env}}")"},
      {"{{env.}}", R"(invalid variable reference "{{env.}}" in "{{env.}}")"},
      {"{{a.}}", R"(invalid variable reference "{{a.}}" in "{{a.}}")"},
      {"{{.a}}", R"(invalid variable reference "{{.a}}" in "{{.a}}")"},
      {"{{a..b}}", R"(invalid variable reference "{{a..b}}" in "{{a..b}}")"},
      {"{{a.1b}}", R"(invalid variable reference "{{a.1b}}" in "{{a.1b}}")"},
      {"{{uuid.x}}", R"(invalid variable reference "{{uuid.x}}" in "{{uuid.x}}")"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<Template> t = Template::compile(c.text);
    REQUIRE_FALSE(t.is_ok());
    CHECK(t.status().message() == c.error);
  }
}

TEST_CASE("scenario templates: an unknown variable expands to empty and is reported") {
  JsonVars vars(kVars, 1, "r");
  Status error;
  CHECK(compile("a{{missing}}b").expand(vars, &error) == "ab");
  CHECK(error.code() == Code::kNotFound);
  CHECK(error.message() == "unknown variable \"missing\"");
}

TEST_CASE("scenario templates: env reads the environment and reports an unset variable") {
  ::setenv("CORRAL_SCN_TEST_VAR", "from-env", 1);
  ::unsetenv("CORRAL_SCN_TEST_UNSET");
  JsonVars vars(kVars, 1, "r");
  Status error;
  CHECK(compile("{{env.CORRAL_SCN_TEST_VAR}}!").expand(vars, &error) == "from-env!");
  CHECK(error.is_ok());
  CHECK(compile("<{{env.CORRAL_SCN_TEST_UNSET}}>").expand(vars, &error) == "<>");
  CHECK(error.message() == "environment variable \"CORRAL_SCN_TEST_UNSET\" is not set");
}

TEST_CASE("scenario templates: uuid is a fresh version-4 UUID at every expansion") {
  const std::regex shape("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  JsonVars vars(kVars, 1, "r");
  Template t = compile("{{uuid}}");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string id = t.expand(vars);
    CAPTURE(id);
    CHECK(std::regex_match(id, shape));
    seen.insert(id);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("scenario templates: a json body keeps the type of a whole-string reference") {
  const json doc = json::parse(R"({
      "count": "{{n}}", "object": "{{obj}}", "flag": "{{ flag }}", "text": "{{job}}",
      "mixed": "n={{n}}", "instance": "{{instance}}", "run": "{{run}}",
      "list": ["{{n}}", "x-{{job}}", 5], "plain": "no refs", "nested": {"deep": "{{base}}"}})");
  Result<JsonTemplate> t = JsonTemplate::compile(doc);
  REQUIRE(t.is_ok());
  CHECK(t->slots().size() == 10);
  JsonVars vars(kVars, 7, "run-9");
  Status error;
  json out = t->expand(vars, &error);
  CHECK(error.is_ok());
  CHECK(out == json::parse(R"({
      "count": 3, "object": {"a": 1}, "flag": true, "text": "j-7",
      "mixed": "n=3", "instance": 7, "run": "run-9",
      "list": [3, "x-j-7", 5], "plain": "no refs", "nested": {"deep": "http://h:1"}})"));
  CHECK(t->source() == doc);  // expansion copies; the compiled template is unchanged
}

TEST_CASE("scenario templates: json body errors name the path inside the document") {
  Result<JsonTemplate> t = JsonTemplate::compile(json::parse(R"({"a": [1, {"b": "{{x"}]})"));
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message() == R"(.a[1].b: unclosed "{{" in "{{x")");
  Result<JsonTemplate> ok = JsonTemplate::compile(json::parse(R"({"a": [1, {"b": "{{x}}"}]})"));
  REQUIRE(ok.is_ok());
  REQUIRE(ok->slots().size() == 1);
  CHECK(ok->slots()[0].path == ".a[1].b");
  CHECK(ok->slots()[0].where.to_string() == "/a/1/b");
}

}  // namespace
}  // namespace corral::scenario

namespace corral::scenario {
namespace {

TEST_CASE("scenario templates: a dotted name is one variable, as a parallel branch's captures are") {
  Result<Template> t = Template::compile("{{eu.job}}/{{ eu.inner.id }}");
  REQUIRE(t.is_ok());
  CHECK(t->variables() == std::vector<std::string>{"eu.job", "eu.inner.id"});
  nlohmann::json values = {{"eu.job", "j-1"}, {"eu.inner.id", 7}};
  CHECK(t->expand(JsonVars(values, 0, "r1")) == "j-1/7");
}

}  // namespace
}  // namespace corral::scenario

// The manual: the man pages and `corral help VERB`, written from the registries, name every
// verb, flag, config field and step kind the code has.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/manual.h"
#include "cli/roff.h"
#include "cli/verb_spec.h"
#include "config/config.h"
#include "config/scenario/step_kind.h"

namespace corral::cli {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every option name of `c` and of its subcommands, each checked in the page and the help.
void check_named(const CommandSpec& c, const std::string& page, const std::string& help) {
  for (const OptionSpec& o : c.options) {
    for (const std::string& name : o.names) {
      INFO(c.name << " " << name);
      CHECK(has(page, roff::escape(name)));  // --home: in DESCRIPTION, once for all verbs
      CHECK(has(help, name));
    }
  }
  for (const CommandSpec& sub : c.subcommands) {
    INFO(c.name << " " << sub.name);
    CHECK(has(help, sub.summary));
    check_named(sub, page, help);
  }
}

TEST_CASE("manual: corral.1 and `corral help VERB` name every verb, flag and subcommand") {
  const std::string page = *man_page("corral.1");
  const std::vector<const VerbInfo*> all = verbs();
  REQUIRE(all.size() > 20);
  for (const VerbInfo* v : all) {
    INFO(v->name);
    CHECK(has(page, ".SS \"corral " + v->name + "\""));
    const CommandSpec spec = describe(*v);
    const std::string help = verb_help(spec);
    CHECK(help.starts_with("corral " + v->name + " - " + v->summary));
    for (const std::string& alias : v->aliases) CHECK(has(help, alias));
    check_named(spec, page, help);
  }
  CHECK(has(page, ".SS \"corral config check\""));
  CHECK(has(page, ".SH EXIT STATUS"));
}

TEST_CASE("manual: a verb's flags carry their values, defaults and fixed choices") {
  const CommandSpec load = describe(*find_verb("load"));
  bool found_choices = false;
  for (const OptionSpec& o : load.options) {
    if (o.choices == std::vector<std::string>{"knee", "bisect"}) found_choices = true;
  }
  CHECK(found_choices);
  const std::string help = verb_help(describe(*find_verb("run")));
  CHECK(has(help, "-n, --instances INT"));
  CHECK(has(help, "  -d, --detach  "));  // a flag: no value
  CHECK(has(help, "--var TEXT"));
  CHECK(has(help, "May be given more than once"));
  CHECK(has(verb_help(describe(*find_verb("startup"))), "Default: 30s"));
  CHECK(has(help, "Usage: corral run [options] file"));
  const std::string schedule = verb_help(describe(*find_verb("schedule")));
  CHECK(has(schedule, "corral schedule add - "));
  CHECK(has(schedule, "--cron"));
}

TEST_CASE("manual: corral-config.5 has every config field with its default") {
  const std::string page = *man_page("corral-config");
  const std::vector<config::FieldDoc> fields = config::field_docs();
  REQUIRE(fields.size() > 40);
  for (const config::FieldDoc& f : fields) {
    INFO(f.name);
    CHECK(has(page, ".B " + roff::escape(f.name) + "\n"));
    CHECK(has(page, roff::escape("default " + f.default_value + ".")));
  }
  // workers: its kind, range and default.
  CHECK(has(page, roff::escape("An integer, from 0 to 1024; default 0.")));
  CHECK(has(page, roff::escape("one of trace, debug, info, warn, error; default \"info\".")));
}

TEST_CASE("manual: corral-scenario.5 has every step kind, its fields, and the docs' tables") {
  const std::string page = *man_page("corral-scenario.5");
  for (const scenario::StepKind* kind : scenario::step_kinds()) {
    INFO(kind->name);
    CHECK(has(page, ".B " + roff::escape(kind->name) + "\n"));
    for (std::string_view field : kind->fields) CHECK(has(page, roff::escape(field)));
  }
  // From docs/scenarios.md: the file's fields, and a step's table with its defaults.
  CHECK(has(page, ".SH \"THE FILE\""));
  CHECK(has(page, ".SH \"REQUEST FIELDS\""));
  CHECK(has(page, "\\fBmax_redirects\\fR\nDefault: \\fB10\\fR."));
  CHECK(has(page, "Sends one request, with retries if you ask for them."));
}

TEST_CASE("manual: unknown pages, and the list of pages") {
  CHECK_FALSE(man_page("corral-nope").has_value());
  CHECK(man_page_names() ==
        std::vector<std::string>{"corral.1", "corral-config.5", "corral-scenario.5"});
  for (const std::string& name : man_page_names()) {
    const std::string page = *man_page(name);
    CHECK(page.starts_with(".TH "));
    CHECK(has(page, ".SH NAME\n"));
  }
}

TEST_CASE("roff: requests are guarded, Markdown becomes fonts") {
  CHECK(roff::escape(".hidden\n'quote") == "\\&.hidden\n\\&'quote");
  CHECK(roff::escape("a\\b --x") == "a\\eb \\-\\-x");
  CHECK(roff::from_markdown("`url` is **required**, see [TLS](#tls) and *this*") ==
        "\\fBurl\\fR is \\fBrequired\\fR, see TLS and \\fIthis\\fR");
  CHECK(roff::from_markdown("2 * 3 and a lone ` stay") == "2 * 3 and a lone ` stay");
}

}  // namespace
}  // namespace corral::cli

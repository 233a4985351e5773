#include "cli/verb_spec.h"

#include <memory>

#include <CLI/CLI.hpp>

#include "cli/entry.h"

namespace corral::cli {
namespace {

// CLI11 shows a fixed set of values as "TEXT:{knee,bisect}" (IsMember's description).
std::vector<std::string> choices_of(const std::string& type_name) {
  const size_t open = type_name.find(":{");
  const size_t close = type_name.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<std::string> out;
  std::string item;
  for (size_t i = open + 2; i < close; ++i) {
    if (type_name[i] == ',') {
      out.push_back(item);
      item.clear();
    } else if (type_name[i] != ' ') {
      item += type_name[i];
    }
  }
  out.push_back(item);
  return out;
}

OptionSpec describe(const CLI::Option& opt) {
  OptionSpec spec;
  spec.positional = opt.get_positional();
  if (spec.positional) {
    spec.names.push_back(opt.get_name(true, false));
  } else {
    for (const std::string& l : opt.get_lnames()) spec.names.push_back("--" + l);
    for (const std::string& s : opt.get_snames()) spec.names.push_back("-" + s);
  }
  spec.required = opt.get_required();
  spec.takes_value = opt.get_expected_max() > 0;  // a flag expects no value
  spec.repeatable = spec.takes_value && opt.get_expected_max() > 1;
  const std::string type = opt.get_type_name();
  spec.choices = choices_of(type);
  spec.value = spec.choices.empty() ? type : type.substr(0, type.find(":{"));
  spec.default_value = opt.get_default_str();
  spec.help = opt.get_description();
  return spec;
}

CommandSpec describe(const CLI::App& app) {
  CommandSpec spec;
  spec.name = app.get_name();
  spec.aliases = app.get_aliases();
  spec.summary = app.get_description();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr() || opt == app.get_help_all_ptr()) continue;
    spec.options.push_back(describe(*opt));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    spec.subcommands.push_back(describe(*sub));
  }
  return spec;
}

}  // namespace

CommandSpec describe(const VerbInfo& verb) {
  CLI::App app{"", "corral"};
  std::string home;
  std::unique_ptr<Verb> made = verb.make();
  return describe(*add_verb_command(app, verb, *made, home));
}

std::vector<CommandSpec> describe_all() {
  std::vector<CommandSpec> out;
  for (const VerbInfo* v : verbs()) out.push_back(describe(*v));
  return out;
}

}  // namespace corral::cli

// `corral config check FILE`: every problem the daemon would find in a config file, one per line
// (exit 2 when there is any). `corral config show [daemon flags] [--json]`: each setting's
// effective value and where it came from (default, env, file or flag). Both exit 2 on invalid
// input, like `corral run` on an invalid scenario.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/daemon_flags.h"
#include "cli/table.h"
#include "cli/verb.h"
#include "config/check.h"
#include "config/config.h"
#include "config/sources.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

// A value as `corral config show` prints it: strings bare ("" when empty), the rest as JSON.
std::string value_cell(const nlohmann::json& value) {
  if (!value.is_string()) return value.dump();
  const std::string& text = value.get_ref<const std::string&>();
  return text.empty() ? "\"\"" : text;
}

class ConfigVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.require_subcommand(1);
    check_ = app.add_subcommand("check", "report every problem in a config file");
    check_->add_option("file", file_, "the JSON config file")->required();
    show_ = app.add_subcommand("show", "each setting's effective value and where it came from");
    flags_.add_to(*show_);
    show_->add_flag("--json", json_, "print {\"config\": ..., \"sources\": ...} as JSON");
    // --home after the subcommand belongs to the verb.
    check_->fallthrough();
    show_->fallthrough();
  }

  int run(const Context& ctx) override { return check_->parsed() ? check() : show(ctx); }

 private:
  int check() const {
    const config::FileCheck result = config::check_file(file_);
    for (const std::string& problem : result.problems) {
      std::cerr << "corral: " << file_ << ": " << problem << "\n";
    }
    if (!result.problems.empty()) return kExitUsage;
    std::cout << "corral: " << file_ << ": ok (" << result.fields_set
              << (result.fields_set == 1 ? " field set)\n" : " fields set)\n");
    return kExitOk;
  }

  int show(const Context& ctx) const {
    config::Config cfg;
    config::Given given;
    try {
      cfg = flags_.build(ctx);
      if (!flags_.config_file.empty()) {
        given.file = flags_.config_file;
        given.settings = config::read_settings(flags_.config_file);
      }
    } catch (const config::ConfigError& e) {
      std::cerr << "corral: " << e.what() << "\n";
      return kExitUsage;
    }
    given.flags = flags_.given(ctx);
    const std::vector<config::Setting> settings = config::effective_settings(cfg, given);
    if (json_) {
      nlohmann::json values = nlohmann::json::object();
      nlohmann::json sources = nlohmann::json::object();
      for (const config::Setting& s : settings) {
        values[s.name] = s.value;
        sources[s.name] = config::describe(s.origin);
      }
      std::cout << nlohmann::json{{"config", values}, {"sources", sources}}.dump(2) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const config::Setting& s : settings) {
      std::string value = value_cell(s.value);
      if (s.name == "workers" && s.value == 0) {
        value += " (one per usable CPU: " + std::to_string(config::usable_cpus()) + ")";
      }
      rows.push_back({s.name, value, config::describe(s.origin)});
    }
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    std::cout << render_table({"field", "value", "source"}, rows, style);
    return kExitOk;
  }

  CLI::App* check_ = nullptr;
  CLI::App* show_ = nullptr;
  std::string file_;
  DaemonFlags flags_;
  bool json_ = false;
};

CORRAL_REGISTER_VERB(ConfigVerb, "config",
                     "check a config file, or show each setting and where it came from")

}  // namespace
}  // namespace corral::cli

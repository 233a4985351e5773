#include "cli/entry.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/verb.h"
#include "config/config.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

constexpr const char* kHomeHelp =
    "corral's home: socket, logs, journal "
    "(default: $CORRAL_HOME, else ~/.corral)";

// Runs one verb: only that verb's subcommand is built, so only its options are parsed.
int run_verb(const VerbInfo& info, int argc, const char* const* argv) {
  CLI::App app{"", "corral"};
  std::string home;
  std::unique_ptr<Verb> verb = info.make();
  add_verb_command(app, info, *verb, home);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "corral " << info.name << ": " << e.what() << "\n"
              << "Run 'corral " << info.name << " --help' for its options.\n";
    return kExitUsage;
  }
  Context ctx;
  ctx.home_given = !home.empty();
  ctx.home = ctx.home_given ? std::filesystem::absolute(home).string() : config::defaults().home;
  if (const char* api = std::getenv("CORRAL_API")) ctx.api_address = api;
  ctx.api_token = config::defaults().api_token;  // $CORRAL_API_TOKEN
  try {
    return verb->run(ctx);
  } catch (const config::ConfigError& e) {
    std::cerr << "corral: " << e.what() << "\n";
    return kExitInitFailed;
  } catch (const std::exception& e) {
    // Should not happen (verbs return errors as values); say what broke rather than abort.
    std::cerr << "corral: internal error in '" << info.name << "': " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

CLI::App* add_verb_command(CLI::App& app, const VerbInfo& info, Verb& verb, std::string& home) {
  app.add_option("--home", home, kHomeHelp)->type_name("DIR");
  app.require_subcommand(1);
  CLI::App* sub = app.add_subcommand(info.name, info.summary);
  for (const std::string& alias : info.aliases) sub->alias(alias);
  sub->add_option("--home", home, kHomeHelp)->type_name("DIR");
  verb.setup(*sub);
  return sub;
}

std::string render_help() {
  std::string out =
      "corral " CORRAL_VERSION
      " - runs long-running API scenarios under a supervisor\n\n"
      "Usage: corral <verb> [options]   (corral <verb> --help shows a verb's options)\n\n"
      "Verbs:\n";
  size_t width = 0;
  for (const VerbInfo* v : verbs()) width = std::max(width, v->name.size());
  for (const VerbInfo* v : verbs()) {
    out += "  " + v->name + std::string(width - v->name.size() + 2, ' ') + v->summary;
    if (!v->aliases.empty()) {
      out += " (also";
      for (const std::string& a : v->aliases) out += " " + a;
      out += ")";
    }
    out += "\n";
  }
  out += "\nGlobal options:\n  --home DIR  ";
  out += kHomeHelp;
  out += "\n";
  return out;
}

int main(int argc, const char* const* argv) {
  // Each line as soon as it is written, also into a pipe (CI logs, systemd's journal): a verb
  // that follows a reload or a load test must not hold its progress until it ends.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Find the verb: the first word that is not an option (nor --home's value).
  int i = 1;
  bool help = false;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--home") {
      ++i;
    } else if (arg == "-h" || arg == "--help") {
      help = true;
    } else if (arg == "--version") {
      std::cout << "corral " CORRAL_VERSION "\n";
      return kExitOk;
    }
  }
  if (help || i >= argc) {
    (help ? std::cout : std::cerr) << render_help();
    return help ? kExitOk : kExitUsage;
  }
  const VerbInfo* info = find_verb(argv[i]);
  if (info == nullptr) {
    std::cerr << "corral: unknown verb '" << argv[i] << "'\n\n" << render_help();
    return kExitUsage;
  }
  return run_verb(*info, argc, argv);
}

}  // namespace corral::cli

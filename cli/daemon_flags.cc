#include "cli/daemon_flags.h"

#include <filesystem>

#include <CLI/CLI.hpp>

namespace corral::cli {

void DaemonFlags::add_to(CLI::App& app) {
  workers_option = app.add_option("--workers", workers, "worker processes (0: one per usable CPU)");
  app.add_option("--listen", listen, "TCP address of the control API, HOST:PORT or off")
      ->type_name("ADDR");
  app.add_option("--config", config_file, "JSON config file (flags override it)")
      ->type_name("FILE");
  app.add_option("--max-memory", max_memory, "memory limit per worker, e.g. 512MB")
      ->type_name("SIZE");
  app.add_option("--journal", journal,
                 "the journal: a SQLite file, or postgresql://USER:PASSWORD@HOST:PORT/DB")
      ->type_name("FILE|URL");
}

config::Config DaemonFlags::build(const Context& ctx) const {
  config::Config cfg = config::defaults();
  if (!config_file.empty()) config::apply_file(cfg, config_file);
  if (workers_option != nullptr && workers_option->count() > 0) cfg.workers = workers;
  if (!listen.empty()) cfg.listen = listen;
  if (!max_memory.empty()) {
    auto bytes = config::parse_bytes(max_memory);
    if (!bytes) throw config::ConfigError("--max-memory: " + bytes.status().message());
    cfg.max_memory_bytes = *bytes;
  }
  if (!journal.empty()) cfg.journal = journal;
  if (ctx.home_given) cfg.home = ctx.home;
  config::validate(cfg);
  return cfg;
}

std::map<std::string, std::string> DaemonFlags::given(const Context& ctx) const {
  std::map<std::string, std::string> flags;
  if (workers_option != nullptr && workers_option->count() > 0) flags["workers"] = "--workers";
  if (!listen.empty()) flags["listen"] = "--listen";
  if (!max_memory.empty()) flags["max_memory"] = "--max-memory";
  if (!journal.empty()) flags["journal"] = "--journal";
  if (ctx.home_given) flags["home"] = "--home";
  return flags;
}

std::vector<std::string> DaemonFlags::to_args(const config::Config& cfg) const {
  std::vector<std::string> args = {"daemon", "--home", cfg.home};
  if (!config_file.empty()) {
    args.insert(args.end(), {"--config", std::filesystem::absolute(config_file).string()});
  }
  if (workers_option != nullptr && workers_option->count() > 0) {
    args.insert(args.end(), {"--workers", std::to_string(workers)});
  }
  if (!listen.empty()) args.insert(args.end(), {"--listen", listen});
  if (!max_memory.empty()) args.insert(args.end(), {"--max-memory", max_memory});
  if (!journal.empty()) args.insert(args.end(), {"--journal", journal});
  return args;
}

}  // namespace corral::cli

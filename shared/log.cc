#include "shared/log.h"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace corral {

Status make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return io_error("mkdir(\"" + partial + "\") failed: " + std::strerror(errno));
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return io_error("\"" + path + "\" is not a directory");
  }
  return Status::ok();
}

Status open_log(const LogOptions& opts) {
  if (Status s = make_dirs(opts.dir); !s) return s;
  std::vector<spdlog::sink_ptr> sinks;
  try {
    sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
        opts.dir + "/" + opts.name + ".log", opts.max_bytes, static_cast<size_t>(opts.files)));
  } catch (const spdlog::spdlog_ex& e) {
    return io_error(std::string("cannot open log file: ") + e.what());
  }
  if (opts.also_stderr) sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto logger = std::make_shared<spdlog::logger>(opts.name, sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::from_str(opts.level));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %n[%P] %^%l%$ %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace corral

// What a worker is started from: the corral executable, held open, and the config and secrets
// it is welcomed with. Holding the file open keeps the exact binary a worker was started from
// for its restarts, even after a package upgrade replaced or removed the file on disk: a reload
// takes a new image, and a slot whose new worker failed keeps restarting from its old one.
// Immutable once opened; shared by the slots started from it. Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "shared/secrets.h"
#include "shared/status.h"

namespace corral::master {

class WorkerImage {
 public:
  // Opens `executable` (close-on-exec). `number` names the image in logs: 0 for the one the
  // daemon started with, then the reload that took it.
  static Result<std::shared_ptr<const WorkerImage>> open(const std::string& executable,
                                                         config::Config cfg, Secrets secrets,
                                                         uint64_t number);
  ~WorkerImage();
  WorkerImage(const WorkerImage&) = delete;
  WorkerImage& operator=(const WorkerImage&) = delete;

  // The path it was opened from, for argv[0] and messages.
  const std::string& path() const { return path_; }
  // The path that executes the open file itself: /proc/self/fd/N (an ELF binary; a script
  // would need its path, which the close-on-exec descriptor no longer gives it).
  std::string exec_path() const;
  const config::Config& config() const { return cfg_; }
  const Secrets& secrets() const { return secrets_; }
  uint64_t number() const { return number_; }

 private:
  WorkerImage(std::string path, int fd, config::Config cfg, Secrets secrets, uint64_t number)
      : path_(std::move(path)), fd_(fd), cfg_(std::move(cfg)), secrets_(std::move(secrets)),
        number_(number) {}

  std::string path_;
  int fd_;
  config::Config cfg_;
  Secrets secrets_;
  uint64_t number_;
};

}  // namespace corral::master

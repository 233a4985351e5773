// $CORRAL_HOME/corral.pid: holds the daemon's pid under an exclusive flock(), so two daemons
// can never share one home. The lock lives as long as the PidFile; the file is removed on
// destruction.
#pragma once

#include <string>

#include "shared/status.h"

namespace corral::master {

class PidFile {
 public:
  // Fails with Code::kAlreadyExists, naming the other daemon's pid, when one holds the lock.
  static Result<PidFile> acquire(const std::string& path);
  PidFile(PidFile&& o) noexcept;
  PidFile(const PidFile&) = delete;
  ~PidFile();

 private:
  PidFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace corral::master

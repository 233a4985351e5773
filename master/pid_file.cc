#include "master/pid_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace corral::master {

Result<PidFile> PidFile::acquire(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("open(\"" + path + "\") failed: " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    std::string other = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!other.empty() && (other.back() == '\n' || other.back() == ' ')) other.pop_back();
    return Status(Code::kAlreadyExists, "another corral daemon (pid " + other +
                                            ") already runs with this home (" + path + ")");
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    int err = errno;
    close(fd);
    return io_error("writing \"" + path + "\" failed: " + std::strerror(err));
  }
  return PidFile(path, fd);
}

PidFile::PidFile(PidFile&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}

PidFile::~PidFile() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);
}

}  // namespace corral::master

#include "master/worker_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace corral::master {

Result<std::shared_ptr<const WorkerImage>> WorkerImage::open(const std::string& executable,
                                                             config::Config cfg, Secrets secrets,
                                                             uint64_t number) {
  int fd = ::open(executable.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open " + executable + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
    ::close(fd);
    return invalid_argument(executable + " is not an executable file");
  }
  return std::shared_ptr<const WorkerImage>(
      new WorkerImage(executable, fd, std::move(cfg), std::move(secrets), number));
}

WorkerImage::~WorkerImage() { ::close(fd_); }

std::string WorkerImage::exec_path() const { return "/proc/self/fd/" + std::to_string(fd_); }

}  // namespace corral::master

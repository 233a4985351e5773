#include "cli/log_tail.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace corral::cli {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kMaxReadPerPoll = 4 * 1024 * 1024;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace

Result<std::vector<std::string>> tail_lines(const std::string& path, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status(Code::kNotFound, path + ": no such file");
    return io_error("open(\"" + path + "\") failed: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("fstat(\"" + path + "\") failed: " + std::strerror(err));
  }
  auto pos = static_cast<uint64_t>(st.st_size);
  std::string text;
  // Read backwards until there are more than n newlines, which guarantees the last n lines
  // are whole (the extra one covers a final newline), or until the start of the file.
  while (pos > 0 && static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) <= n) {
    const uint64_t len = std::min<uint64_t>(kChunk, pos);
    pos -= len;
    std::string chunk(len, '\0');
    const ssize_t got = ::pread(fd, chunk.data(), len, static_cast<off_t>(pos));
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("pread(\"" + path + "\") failed: " + std::strerror(err));
    }
    chunk.resize(static_cast<size_t>(got));  // shorter if the file shrank meanwhile
    text.insert(0, chunk);
  }
  ::close(fd);
  std::vector<std::string> lines = split_lines(text);
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<ptrdiff_t>(n));
  return lines;
}

std::vector<LogFile> current_log_files(const std::string& logs_dir) {
  namespace fs = std::filesystem;
  std::vector<LogFile> out;
  std::error_code ec;
  if (fs::exists(fs::path(logs_dir) / "master.log", ec)) {
    out.push_back({(fs::path(logs_dir) / "master.log").string(), "master"});
  }
  static const std::regex kWorkerLog(R"(worker-(\d+)\.log)");
  std::map<long, LogFile> workers;
  for (fs::directory_iterator it(logs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kWorkerLog)) {
      workers[std::stol(m[1])] = {it->path().string(), "worker-" + m[1].str()};
    }
  }
  for (auto& [slot, file] : workers) out.push_back(std::move(file));
  return out;
}

void LogFollower::add(const LogFile& file, bool from_start) {
  for (const Followed& f : files_) {
    if (f.file.path == file.path) return;
  }
  Followed f;
  f.file = file;
  struct stat st {};
  if (!from_start && ::stat(file.path.c_str(), &st) == 0) {
    f.inode = st.st_ino;
    f.offset = static_cast<uint64_t>(st.st_size);
  }
  label_width_ = std::max(label_width_, file.label.size());
  files_.push_back(std::move(f));
}

void LogFollower::poll(std::ostream& out) {
  for (Followed& f : files_) poll_one(f, out);
  out.flush();
}

void LogFollower::poll_one(Followed& f, std::ostream& out) {
  struct stat st {};
  if (::stat(f.file.path.c_str(), &st) != 0) return;  // gone for now (mid-rotation)
  const auto size = static_cast<uint64_t>(st.st_size);
  const std::string prefix =
      f.file.label + std::string(label_width_ - f.file.label.size(), ' ') + " | ";
  if (st.st_ino != f.inode || size < f.offset) {
    if (!f.partial.empty()) out << prefix << f.partial << "\n";
    f.partial.clear();
    f.inode = st.st_ino;
    f.offset = 0;
  }
  if (size <= f.offset) return;
  std::ifstream in(f.file.path, std::ios::binary);
  if (!in) return;
  const uint64_t len = std::min<uint64_t>(size - f.offset, kMaxReadPerPoll);
  std::string bytes(len, '\0');
  in.seekg(static_cast<std::streamoff>(f.offset));
  in.read(bytes.data(), static_cast<std::streamsize>(len));
  bytes.resize(static_cast<size_t>(in.gcount()));
  f.offset += bytes.size();
  f.partial += bytes;
  size_t start = 0;
  for (size_t nl; (nl = f.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    out << prefix << std::string_view(f.partial).substr(start, nl - start) << "\n";
  }
  f.partial.erase(0, start);
}

}  // namespace corral::cli

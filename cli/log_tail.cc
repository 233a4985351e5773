#include "cli/log_tail.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string_view>

namespace corral::cli {
namespace {

constexpr size_t kMaxReadPerPoll = 4 * 1024 * 1024;

}  // namespace

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

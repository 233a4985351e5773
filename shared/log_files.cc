#include "shared/log_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <utility>

namespace corral {
namespace {

constexpr size_t kTailChunk = 64 * 1024;
constexpr size_t kLogTimestampLength = 23;  // "2026-11-30T15:00:00.123"

std::vector<std::string> split_log_lines(const std::string& text) {
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

size_t count_newlines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

bool starts_with_timestamp(const std::string& line) {
  return line.size() >= kLogTimestampLength && std::isdigit(static_cast<unsigned char>(line[0])) &&
         line[4] == '-' && line[10] == 'T' && line[13] == ':' && line[19] == '.';
}

}  // namespace

Result<std::vector<std::string>> tail_lines(const std::string& path, size_t n, size_t max_bytes) {
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
  const uint64_t budget = max_bytes > 0 ? max_bytes : UINT64_MAX;
  auto pos = static_cast<uint64_t>(st.st_size);
  std::string text;
  // Read backwards until there are more than n newlines, which guarantees the last n lines
  // are whole (the extra one covers a final newline), or until the start of the file.
  while (pos > 0 && text.size() < budget && count_newlines(text) <= n) {
    const uint64_t len = std::min<uint64_t>({kTailChunk, pos, budget - text.size()});
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
  if (pos > 0 && count_newlines(text) <= n) {  // stopped by the budget: the first line is cut
    const size_t nl = text.find('\n');
    text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
  }
  std::vector<std::string> lines = split_log_lines(text);
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

std::vector<std::string> merge_log_tails(const std::vector<std::vector<std::string>>& tails,
                                         size_t n) {
  std::vector<std::pair<std::string, const std::string*>> keyed;
  for (const auto& lines : tails) {
    std::string key;  // lines before the file's first timestamp sort first
    for (const std::string& line : lines) {
      if (starts_with_timestamp(line)) key = line.substr(0, kLogTimestampLength);
      keyed.emplace_back(key, &line);
    }
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = keyed.size() > n ? keyed.size() - n : 0; i < keyed.size(); ++i) {
    out.push_back(*keyed[i].second);
  }
  return out;
}

}  // namespace corral

// usable_cpus(): sched affinity, limited by cgroup v2 cpu.max quotas. The parsing is pure
// (parse_cpu_max, cpus_from); only usable_cpus() touches the system.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "config/config.h"

namespace corral::config {
namespace {

// CPUs in this process's affinity mask. The mask is grown until the kernel accepts its size,
// so machines with more than CPU_SETSIZE (1024) CPUs are counted too.
int affinity_cpus() {
  for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* mask = CPU_ALLOC(cpus);
    if (mask == nullptr) break;
    size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, mask);
    int rc = sched_getaffinity(0, size, mask);
    int err = errno;
    int count = CPU_COUNT_S(size, mask);
    CPU_FREE(mask);
    if (rc == 0) return count;
    if (err != EINVAL) break;
  }
  return 1;
}

// "0::/some/path" from /proc/self/cgroup (the cgroup v2 line), or "" when there is none.
std::string own_cgroup_path() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<double> parse_cpu_max(std::string_view contents) {
  while (!contents.empty() && (contents.back() == '\n' || contents.back() == ' ')) {
    contents.remove_suffix(1);
  }
  size_t space = contents.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view quota_text = contents.substr(0, space);
  std::string_view period_text = contents.substr(space + 1);
  uint64_t quota = 0;
  uint64_t period = 0;
  auto q = std::from_chars(quota_text.data(), quota_text.data() + quota_text.size(), quota);
  auto p = std::from_chars(period_text.data(), period_text.data() + period_text.size(), period);
  bool whole = q.ec == std::errc() && q.ptr == quota_text.data() + quota_text.size() &&
               p.ec == std::errc() && p.ptr == period_text.data() + period_text.size();
  if (!whole || quota == 0 || period == 0) return std::nullopt;  // includes "max <period>"
  return static_cast<double>(quota) / static_cast<double>(period);
}

int cpus_from(int affinity_count, const std::vector<std::string>& cpu_max_contents) {
  double limit = std::max(affinity_count, 1);
  for (const std::string& contents : cpu_max_contents) {
    std::optional<double> cpus = parse_cpu_max(contents);
    if (cpus) limit = std::min(limit, std::ceil(*cpus));
  }
  return static_cast<int>(limit);  // >= 1: it starts at >= 1 and each ceil of a quota > 0 is >= 1
}

int usable_cpus() {
  std::vector<std::string> cpu_max;
  std::string path = own_cgroup_path();
  // The effective quota is the smallest along the path, so read every ancestor up to the root
  // of the cgroup namespace ("/", which is /sys/fs/cgroup itself).
  while (!path.empty()) {
    if (std::optional<std::string> text = read_small_file("/sys/fs/cgroup" + path + "/cpu.max")) {
      cpu_max.push_back(*text);
    }
    if (path == "/") break;
    size_t slash = path.rfind('/');
    path = (slash == 0 || slash == std::string::npos) ? "/" : path.substr(0, slash);
  }
  return cpus_from(affinity_cpus(), cpu_max);
}

}  // namespace corral::config

#include "master/load_watch.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "config/config.h"
#include "shared/http/blocking_client.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

constexpr uint64_t kEveryMs = 1000;
constexpr long kScrapeTimeoutMs = 900;  // within the second: one scrape at a time

uint64_t count_fds(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  uint64_t n = 0;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// Prometheus text: "name{labels} value [timestamp]" lines; '#' lines are comments.
void parse_prometheus(const std::string& body, const std::vector<std::string>& names,
                      std::map<std::string, double>& out) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t end = line.find_first_of("{ \t");
    if (end == std::string::npos) continue;
    std::string name = line.substr(0, end);
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    size_t value_at = line[end] == '{' ? line.find('}', end) : end;
    if (value_at == std::string::npos) continue;
    const char* start = line.c_str() + value_at + (line[end] == '{' ? 1 : 0);
    char* stop = nullptr;
    double v = std::strtod(start, &stop);
    if (stop == start) continue;
    out[name] += v;
  }
}

}  // namespace

std::optional<std::pair<http::Target, std::string>> split_http_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) return std::nullopt;
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.find(':') == std::string::npos) authority += ":80";
  auto hp = config::parse_host_port(authority);
  if (!hp) return std::nullopt;
  return std::make_pair(http::Target::over_tcp(hp->first, hp->second), path);
}

std::optional<ProcReading> read_proc(pid_t pid) {
  std::optional<ProcStat> stat = proc_stat(pid);
  if (!stat) return std::nullopt;
  ProcReading r;
  r.cpu_ticks = stat->cpu_ticks;
  r.threads = stat->threads;
  r.rss_bytes = rss_bytes(pid);
  r.fds = count_fds(pid);
  return r;
}

std::map<std::string, double> parse_metrics(const std::string& body,
                                            const std::vector<std::string>& names) {
  std::map<std::string, double> out;
  json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    for (const std::string& n : names) {
      auto it = j.find(n);
      if (it != j.end() && it->is_number()) out[n] = it->get<double>();
    }
    return out;
  }
  parse_prometheus(body, names, out);
  return out;
}

struct TargetWatch::Scrape {
  uv_work_t req;
  TargetWatch* owner;  // null once the watch is gone
  std::string url;
  std::vector<std::string> names;
  std::map<std::string, double> values;
  std::string error;
};

TargetWatch::TargetWatch(uv_loop_t* loop, load::Watch watch, OnSample on_sample)
    : loop_(loop), watch_(std::move(watch)), on_sample_(std::move(on_sample)), timer_(loop) {}

TargetWatch::~TargetWatch() {
  if (scraping_ != nullptr) scraping_->owner = nullptr;  // on_scraped frees it
}

void TargetWatch::start() {
  started_ms_ = monotonic_ms();
  on_tick();
  timer_.start(kEveryMs, kEveryMs, [this] { on_tick(); });
}

void TargetWatch::on_tick() {
  const uint64_t now = monotonic_ms();
  json s = {{"t", static_cast<double>(now - started_ms_) / 1000}};
  if (watch_.pid != 0 && !died_) {
    std::optional<ProcReading> r = read_proc(static_cast<pid_t>(watch_.pid));
    if (!r) died_ = true;
    if (r) {
      s["rss"] = r->rss_bytes;
      s["fds"] = r->fds;
      s["threads"] = r->threads;
      if (last_ && now > last_ms_) {
        double ticks = static_cast<double>(r->cpu_ticks - last_->cpu_ticks);
        s["cpu"] = ticks / static_cast<double>(::sysconf(_SC_CLK_TCK)) /
                   (static_cast<double>(now - last_ms_) / 1000);
      }
      last_ = r;
      last_ms_ = now;
    }
  }
  if (watch_.pid != 0) s["up"] = !died_;
  for (const auto& [name, value] : scraped_.items()) s[name] = value;
  if (!scrape_error_.empty()) s["scrape_error"] = scrape_error_;
  if (!watch_.url.empty() && scraping_ == nullptr) scrape();
  on_sample_(std::move(s));  // last: it may destroy this watch
}

void TargetWatch::scrape() {
  auto* w = new Scrape{};
  w->req.data = w;
  w->owner = this;
  w->url = watch_.url;
  w->names = watch_.series;
  int rc = uv_queue_work(
      loop_, &w->req,
      [](uv_work_t* req) {
        auto* job = static_cast<Scrape*>(req->data);
        auto target = split_http_url(job->url);
        if (!target) {
          job->error = "not an http://host:port/path URL";
          return;
        }
        auto r = http::request(target->first, "GET", target->second, {}, kScrapeTimeoutMs);
        if (!r) {
          job->error = r.status().message();
        } else if (r->status != 200) {
          job->error = "HTTP " + std::to_string(r->status);
        } else {
          job->values = parse_metrics(r->body, job->names);
        }
      },
      &TargetWatch::on_scraped);
  if (rc != 0) {
    delete w;
    scrape_error_ = std::string("cannot scrape: ") + uv_strerror(rc);
    return;
  }
  scraping_ = w;
}

void TargetWatch::on_scraped(uv_work_t* req, int) {
  std::unique_ptr<Scrape> w(static_cast<Scrape*>(req->data));
  TargetWatch* self = w->owner;
  if (self == nullptr) return;
  self->scraping_ = nullptr;
  self->scrape_error_ = w->error;
  if (!w->error.empty()) return;  // the last values stay, with the error beside them
  self->scraped_ = json::object();
  for (const auto& [name, value] : w->values) self->scraped_[name] = value;
}

}  // namespace corral::master

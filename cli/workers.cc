#include "cli/workers.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "cli/format.h"
#include "cli/status_view.h"

namespace corral::cli {

Result<api::WorkersAnswer> get_workers(const Api& api) {
  return get_answer(api, "/workers", &api::workers_from_json);
}

Result<api::Health> get_health(const Api& api) {
  return get_answer(api, "/health", &api::health_from_json);
}

int print_status(const Api& api) {
  auto workers = get_workers(api);
  if (!workers) return report_failure(workers.status(), api.socket_path());
  auto health = get_health(api);
  if (!health) return report_failure(health.status(), api.socket_path());
  const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
  std::cout << render_status_table(workers->workers, WallClock::now(), style)
            << render_summary_line(*health, workers->workers) << "\n";
  return 0;
}

Result<bool> wait_for_workers(const Api& api, const std::function<bool(const Workers&)>& done,
                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto workers = get_workers(api);
    if (!workers) return workers.status();
    if (done(workers->workers)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

long count_in_state(const Workers& workers, const char* state) {
  return std::count_if(workers.begin(), workers.end(),
                       [&](const api::WorkerEntry& w) { return w.state == state; });
}

std::map<long, long> pids_by_slot(const Workers& workers) {
  std::map<long, long> out;
  for (const api::WorkerEntry& w : workers) out[w.slot] = static_cast<long>(w.pid);
  return out;
}

bool all_replaced_and_ready(const Workers& workers, const std::map<long, long>& before,
                            const std::vector<long>& slots) {
  for (long slot : slots) {
    auto w = std::find_if(workers.begin(), workers.end(),
                          [&](const api::WorkerEntry& e) { return e.slot == slot; });
    if (w == workers.end() || w->state != "ready") return false;
    auto was = before.find(slot);
    if (was != before.end() && was->second != 0 && was->second == w->pid) return false;
  }
  return true;
}

int replace_workers(const Api& api, const std::string& path, const nlohmann::json& body,
                    const char* answer_key, std::chrono::milliseconds timeout) {
  auto before = get_workers(api);
  if (!before) return report_failure(before.status(), api.socket_path());
  const std::map<long, long> old_pids = pids_by_slot(before->workers);
  auto answer = api.post(path, body);
  if (!answer) return report_failure(answer.status(), api.socket_path());

  std::vector<long> slots;
  const nlohmann::json listed = json_field(*answer, answer_key);
  for (const auto& s : listed.is_array() ? listed : nlohmann::json::array()) {
    if (s.is_number_integer()) slots.push_back(s.get<long>());
  }
  std::string names;
  for (long s : slots) names += (names.empty() ? "" : ", ") + std::to_string(s);
  std::cout << "corral: " << answer_key << " " << (slots.size() == 1 ? "worker " : "workers ")
            << (names.empty() ? "(none)" : names) << "\n";

  auto done = wait_for_workers(
      api, [&](const Workers& list) { return all_replaced_and_ready(list, old_pids, slots); },
      timeout);
  if (!done) return report_failure(done.status(), api.socket_path());
  if (int rc = print_status(api); rc != 0) return rc;
  if (!*done) {
    return fail("not every worker was ready again after " + std::to_string(timeout.count() / 1000) +
                "s");
  }
  return 0;
}

}  // namespace corral::cli

#include "cli/workers.h"

#include <iostream>
#include <thread>

#include <unistd.h>

#include "cli/format.h"
#include "cli/status_view.h"

namespace corral::cli {

int print_status(const Api& api) {
  auto workers = api.get("/workers");
  if (!workers) return report_failure(workers.status(), api.socket_path());
  auto health = api.get("/health");
  if (!health) return report_failure(health.status(), api.socket_path());
  const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
  std::cout << render_status_table(*workers, WallClock::now(), style)
            << render_summary_line(*health, *workers) << "\n";
  return 0;
}

Result<bool> wait_for_workers(const Api& api,
                              const std::function<bool(const nlohmann::json&)>& done,
                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto workers = api.get("/workers");
    if (!workers) return workers.status();
    if (done(worker_list(*workers))) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

long count_in_state(const nlohmann::json& list, const char* state) {
  long n = 0;
  for (const auto& w : list) n += json_string(w, "state") == state ? 1 : 0;
  return n;
}

std::map<long, long> pids_by_slot(const nlohmann::json& list) {
  std::map<long, long> out;
  for (const auto& w : list) {
    out[static_cast<long>(json_number(w, "slot", -1))] = static_cast<long>(json_number(w, "pid"));
  }
  return out;
}

bool all_replaced_and_ready(const nlohmann::json& list, const std::map<long, long>& before,
                            const std::vector<long>& slots) {
  const std::map<long, long> now = pids_by_slot(list);
  for (long slot : slots) {
    bool ready = false;
    for (const auto& w : list) {
      if (static_cast<long>(json_number(w, "slot", -1)) == slot) {
        ready = json_string(w, "state") == "ready";
      }
    }
    auto was = before.find(slot);
    auto is = now.find(slot);
    if (!ready || is == now.end()) return false;
    if (was != before.end() && was->second != 0 && was->second == is->second) return false;
  }
  return true;
}

int replace_workers(const Api& api, const std::string& path, const nlohmann::json& body,
                    const char* answer_key, std::chrono::milliseconds timeout) {
  auto before = api.get("/workers");
  if (!before) return report_failure(before.status(), api.socket_path());
  const std::map<long, long> old_pids = pids_by_slot(worker_list(*before));
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
      api,
      [&](const nlohmann::json& list) { return all_replaced_and_ready(list, old_pids, slots); },
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

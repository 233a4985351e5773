// `corral reload`: replaces the workers one slot at a time from the binary and config on disk.
// Each new worker starts beside the old one and takes over only after it has been ready and
// healthy for `reload_grace`; the first one that fails stops the reload, and the slots not
// replaced keep their workers. Waits for the outcome: exit 0 when every slot was replaced,
// 1 naming the slot and the reason when the reload failed.
#include <chrono>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"
#include "cli/workers.h"
#include "config/config.h"

namespace corral::cli {
namespace {

using nlohmann::json;

std::string slot_list(const json& slots) {
  std::string out;
  for (const auto& s : slots.is_array() ? slots : json::array()) {
    out += (out.empty() ? "" : ", ") + s.dump();
  }
  return out.empty() ? "none" : out;
}

class ReloadVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--wait-timeout", wait_timeout_,
                   "give up waiting after this long (0s: wait until the reload ends)")
        ->capture_default_str();
  }

  int run(const Context& ctx) override {
    auto timeout = config::parse_duration_ms(wait_timeout_);
    if (!timeout) return fail("--wait-timeout: " + timeout.status().message());
    Api api(ctx);
    auto answer = api.post("/workers/reload", json::object());
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const json started = json_field(*answer, "reload");
    const auto number = static_cast<long long>(json_number(started, "number"));
    std::cout << "corral: reload " << number << ": replacing workers "
              << slot_list(json_field(started, "slots")) << " one at a time (each new worker "
              << "must stay healthy for "
              << config::format_duration_ms(static_cast<uint64_t>(json_number(started, "grace_ms")))
              << " before it takes over)\n";
    for (const auto& note : json_field(started, "notes")) {
      std::cout << "corral: note: " << (note.is_string() ? note.get<std::string>() : "") << "\n";
    }
    auto ended = wait_for_end(api, number, std::chrono::milliseconds(*timeout));
    if (!ended) return report_failure(ended.status(), api.socket_path());
    if (int rc = print_status(api); rc != 0) return rc;
    const std::string state = json_string(*ended, "state");
    if (state == "done") {
      std::cout << "corral: reload " << number << " done: workers "
                << slot_list(json_field(*ended, "replaced")) << " replaced\n";
      return 0;
    }
    if (state == "running") {
      return fail("reload " + std::to_string(number) + " still running after " + wait_timeout_ +
                  " (see `corral status`)");
    }
    const json replaced = json_field(*ended, "replaced");
    return fail("reload " + std::to_string(number) + " failed at slot " +
                json_field(*ended, "slot").dump() + ": " + json_string(*ended, "error") + "; " +
                (replaced.empty() ? std::string("every slot keeps its previous worker")
                                  : "slots " + slot_list(replaced) +
                                        " run new workers, the others keep their previous ones"));
  }

 private:
  // Polls GET /workers/reload until reload `number` is no longer running, or `timeout` (when
  // not 0) passes; returns its last state.
  static Result<json> wait_for_end(const Api& api, long long number,
                                   std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto r = api.get("/workers/reload");
      if (!r) return r.status();
      json reload = json_field(*r, "reload");
      if (static_cast<long long>(json_number(reload, "number")) != number || json_string(reload, "state") != "running") {
        return reload;
      }
      if (timeout.count() > 0 && std::chrono::steady_clock::now() >= deadline) return reload;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::string wait_timeout_ = "0s";
};

CORRAL_REGISTER_VERB(ReloadVerb, "reload",
                     "replace the workers one at a time; a new worker that fails is rolled back")

}  // namespace
}  // namespace corral::cli

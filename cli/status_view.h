// What `corral status` and `corral describe` print, as pure functions of the API's answers
// (GET /workers, GET /health, read into shared/api/workers.h) and the current time, so they
// can be tested without a daemon.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "cli/table.h"
#include "shared/api/workers.h"

namespace corral::cli {

using Workers = std::vector<api::WorkerEntry>;

// The pm2-style table of workers, one row per slot in slot order, followed by one note line
// per slot that is errored (with its reason) or waiting to restart.
std::string render_status_table(const Workers& workers, WallClock::time_point now,
                                TableStyle style = TableStyle::kBox);

// "2/2 workers ready · daemon pid 123 · api 127.0.0.1:7070 · home /root/.corral"
// from GET /health and GET /workers. No trailing newline.
std::string render_summary_line(const api::Health& health, const Workers& workers);

// Every field of one worker as aligned "key : value" lines, in human form.
std::string render_worker_description(const api::WorkerEntry& worker, WallClock::time_point now);

// The note for a slot whose state needs explaining (errored with its reason, restarting soon,
// reloading), one line per fact, without a final newline; "" for the others.
std::string worker_note(const api::WorkerEntry& worker);

// A worker's last exit as one cell: "signal SIGKILL 2m ago", "crash (exit 1) 5s ago", "-" for
// none. The age is left out when its time is missing or malformed.
std::string describe_last_exit(const std::optional<api::LastExit>& last_exit,
                               WallClock::time_point now);

// `corral status --cluster`: the hosts of GET /cluster, one row each (this daemon's id marked
// with "*"), then "2/3 hosts alive". Ends with a newline.
std::string render_cluster_table(const nlohmann::json& cluster, TableStyle style = TableStyle::kBox);

}  // namespace corral::cli

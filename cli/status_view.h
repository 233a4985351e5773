// What `corral status` and `corral describe` print, as pure functions of the API's JSON
// (GET /workers, GET /health) and the current time, so they can be tested without a daemon.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "cli/table.h"

namespace corral::cli {

// The pm2-style table of workers, one row per slot in slot order, followed by one note line
// per slot that is errored (with its reason) or waiting to restart. `workers` is the body of
// GET /workers or its "workers" array.
std::string render_status_table(const nlohmann::json& workers, WallClock::time_point now,
                                TableStyle style = TableStyle::kBox);

// "2/2 workers ready · daemon pid 123 · api 127.0.0.1:7070 · home /root/.corral"
// from GET /health and GET /workers. No trailing newline.
std::string render_summary_line(const nlohmann::json& health, const nlohmann::json& workers);

// Every field of one worker (an element of the "workers" array) as aligned "key : value" lines,
// the known ones in human form, unknown ones as JSON.
std::string render_worker_description(const nlohmann::json& worker, WallClock::time_point now);

// The note for a slot whose state needs explaining (errored with its reason, restarting soon,
// reloading), one line per fact, without a final newline; "" for the others.
std::string worker_note(const nlohmann::json& worker);

// `corral status --cluster`: the hosts of GET /cluster, one row each (this daemon's id marked
// with "*"), then "2/3 hosts alive". Ends with a newline.
std::string render_cluster_table(const nlohmann::json& cluster, TableStyle style = TableStyle::kBox);

// The workers of a GET /workers body (or array) in slot order.
std::vector<nlohmann::json> sorted_by_slot(const nlohmann::json& workers);

// The "workers" array of a GET /workers body (or `workers` itself if it is an array); an
// empty array for anything else.
nlohmann::json worker_list(const nlohmann::json& workers);

}  // namespace corral::cli

// Showing and waiting for the daemon's workers; shared by the verbs that change them
// (start, restart, reload, scale) and by status.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/api.h"
#include "cli/status_view.h"
#include "shared/api/workers.h"

namespace corral::cli {

// Prints the status table (box-drawing when stdout is a terminal) and the summary line.
// Returns 0, or the exit code of a failed API call (already reported).
int print_status(const Api& api);

// GET /workers and GET /health, read into their answer models; an answer that does not fit its
// model is an error that names the field.
Result<api::WorkersAnswer> get_workers(const Api& api);
Result<api::Health> get_health(const Api& api);

// Polls GET /workers every 100 ms until done(workers, in slot order) holds (true) or `timeout`
// passes (false). API failures are returned as they are.
Result<bool> wait_for_workers(const Api& api, const std::function<bool(const Workers&)>& done,
                              std::chrono::milliseconds timeout);

// How many workers are in `state`.
long count_in_state(const Workers& workers, const char* state);

// slot -> pid; to tell later whether a slot got a new process.
std::map<long, long> pids_by_slot(const Workers& workers);

// True when every slot in `slots` runs a process other than the one in `before` and is ready.
bool all_replaced_and_ready(const Workers& workers, const std::map<long, long>& before,
                            const std::vector<long>& slots);

// The restart and reload verbs: POSTs `body` to `path`, prints the slots listed under
// `answer_key` in the answer ("restarting": [0, 1]), waits up to `timeout` until each of them
// runs a new, ready process, and prints the table. Returns 1 (after the table) if they were not
// all back in time.
int replace_workers(const Api& api, const std::string& path, const nlohmann::json& body,
                    const char* answer_key, std::chrono::milliseconds timeout);

}  // namespace corral::cli

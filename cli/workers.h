// Showing and waiting for the daemon's workers; shared by the verbs that change them
// (start, restart, reload, scale) and by status.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/api.h"

namespace corral::cli {

// Prints the status table (box-drawing when stdout is a terminal) and the summary line.
// Returns 0, or the exit code of a failed API call (already reported).
int print_status(const Api& api);

// Polls GET /workers every 100 ms until done(list of workers) holds (true) or `timeout`
// passes (false). API failures are returned as they are.
Result<bool> wait_for_workers(const Api& api,
                              const std::function<bool(const nlohmann::json&)>& done,
                              std::chrono::milliseconds timeout);

// How many workers in the list are in `state`.
long count_in_state(const nlohmann::json& list, const char* state);

// slot -> pid, from a list of workers; to tell later whether a slot got a new process.
std::map<long, long> pids_by_slot(const nlohmann::json& list);

// True when every slot in `slots` runs a process other than the one in `before` and is ready.
bool all_replaced_and_ready(const nlohmann::json& list, const std::map<long, long>& before,
                            const std::vector<long>& slots);

// The restart and reload verbs: POSTs `body` to `path`, prints the slots listed under
// `answer_key` in the answer ("restarting": [0, 1]), waits up to `timeout` until each of them
// runs a new, ready process, and prints the table. Returns 1 (after the table) if they were not
// all back in time.
int replace_workers(const Api& api, const std::string& path, const nlohmann::json& body,
                    const char* answer_key, std::chrono::milliseconds timeout);

}  // namespace corral::cli

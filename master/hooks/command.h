// A command hook's run: the hook's argv started with uv::Process (no shell, no fork of the master),
// the payload on its stdin, CORRAL_EVENT=<event> added to the daemon's environment, its stdout and
// stderr the daemon's own. It runs in a process group of its own, which is killed (SIGKILL) past
// the hook's timeout, so that a shell's children go too. Exit 0 is success. Loop thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "config/hooks.h"
#include "master/hooks/delivery.h"

namespace corral::master {

// Starts the command with `payload` (a JSON text; a newline is added) for its stdin. Fails
// when it cannot be started (no such program, not executable); every later failure comes
// through `done`.
Result<std::unique_ptr<Delivery>> start_command(uv_loop_t* loop, const config::Hook& hook,
                                                config::HookEvent event, const std::string& payload,
                                                Delivery::Done done);

}  // namespace corral::master

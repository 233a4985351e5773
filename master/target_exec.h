// How a load test's target is started so that it never outlives the daemon: through the
// corral binary's hidden `target-exec` role, which asks the kernel to kill it with SIGKILL when
// the daemon's loop thread ends (PR_SET_PDEATHSIG, kept across exec), then execs the command in
// its own place. A daemon killed outright so leaves no target behind; what the target started
// itself is in its process group, which the daemon stops as one while it lives.
#pragma once

#include <string>
#include <vector>

namespace corral::master {

// The argv that runs `cmd` so: <corral> target-exec --parent <this process's pid> -- cmd...,
// `corral` being the binary with the role (this one, the daemon's, by default).
std::vector<std::string> target_exec_argv(const std::vector<std::string>& cmd,
                                          const std::string& corral = "/proc/self/exe");

// The role itself (main.cc), given the arguments after "target-exec". Returns only when the
// command cannot be run: 127, having said why on stderr (the target's last lines show it).
int run_target_exec(int argc, char** argv);

}  // namespace corral::master

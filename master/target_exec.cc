#include "master/target_exec.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace corral::master {

std::vector<std::string> target_exec_argv(const std::vector<std::string>& cmd,
                                          const std::string& corral) {
  std::vector<std::string> argv = {corral, "target-exec", "--parent", std::to_string(::getpid()),
                                   "--"};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

int run_target_exec(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[0], "--parent") != 0 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr,
                 "corral target-exec: started by 'corral daemon' for a load test's "
                 "target, as: target-exec --parent PID -- COMMAND...\n");
    return 127;
  }
  const pid_t parent = static_cast<pid_t>(std::atol(argv[1]));
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Set before looking: a daemon that died in between is still noticed.
  if (::getppid() != parent) return 127;
  ::execvp(argv[3], argv + 3);
  std::fprintf(stderr, "corral: cannot run the target \"%s\": %s\n", argv[3], std::strerror(errno));
  return 127;
}

}  // namespace corral::master

#include "worker/worker_main.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "shared/exit_codes.h"
#include "shared/uv/next_turn.h"
#include "worker/worker.h"

namespace corral::worker {

int run_worker(int argc, char** argv) {
  // --slot N, or --spare: a worker started in advance, whose slot its welcome names.
  int slot = -1;
  bool spare = false;
  std::string home;
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--spare") {
      spare = true;
    } else if (flag == "--slot" && i + 1 < argc) {
      slot = std::atoi(argv[++i]);
    } else if (flag == "--home" && i + 1 < argc) {
      home = argv[++i];
    }
  }
  struct stat st {};
  if ((slot < 0 && !spare) || home.empty() || fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr,
                 "corral worker: started without --slot (or --spare), --home or an IPC socket "
                 "on fd 3; workers are started by 'corral daemon'\n");
    return kExitInitFailed;
  }
  // Backstop for EOF on fd 3: die with the master. Set before checking the parent, so a master
  // that died in between is still noticed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return kExitOk;
  // The master execs the worker through /proc/self/fd/N, which would leave "N" as the name
  // ps, top and perf show.
  prctl(PR_SET_NAME, "corral-worker");
  std::signal(SIGPIPE, SIG_IGN);

  uv_loop_t loop;
  uv_loop_init(&loop);
  int code = 0;
  {
    uv::TurnMarker turns(&loop);  // work in slices shares one per poll (uv::Slice::of_turn)
    Worker w(&loop, slot, home);
    if (Status s = w.start(); !s) {
      std::fprintf(stderr, "corral worker %d: %s\n", slot, s.message().c_str());
      return kExitInitFailed;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    code = w.exit_code();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  spdlog::default_logger()->flush();
  return code;
}

}  // namespace corral::worker

// The one corral binary: the CLI, `corral daemon` (the master), and the hidden roles the master
// spawns: `corral worker`, and `corral target-exec` for a load test's target.
#include <cstring>

#include "cli/entry.h"
#include "master/target_exec.h"
#include "worker/worker_main.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "worker") == 0) {
    return corral::worker::run_worker(argc - 2, argv + 2);
  }
  if (argc > 1 && std::strcmp(argv[1], "target-exec") == 0) {
    return corral::master::run_target_exec(argc - 2, argv + 2);
  }
  return corral::cli::main(argc, argv);
}

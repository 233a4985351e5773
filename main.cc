// The one corral binary: the CLI, `corral daemon` (the master), and the hidden `corral worker`
// role that the master spawns.
#include <cstring>

#include "cli/entry.h"
#include "worker/worker_main.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "worker") == 0) {
    return corral::worker::run_worker(argc - 2, argv + 2);
  }
  return corral::cli::main(argc, argv);
}

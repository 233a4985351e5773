// corral-target [--listen HOST:PORT]: serves the test API in target.h until SIGINT/SIGTERM.
// Prints "listening on HOST:PORT" once it accepts connections (port 0 picks a free port).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "config/config.h"
#include "tools/target/target.h"

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:8081";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
      listen = argv[++i];
    } else {
      std::fprintf(stderr, "usage: corral-target [--listen HOST:PORT]\n");
      return 2;
    }
  }
  auto hp = corral::config::parse_host_port(listen);
  if (!hp) {
    std::fprintf(stderr, "corral-target: --listen: %s\n", hp.status().message().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  uv_loop_t* loop = uv_default_loop();
  corral::target::Target target(loop);
  if (auto s = target.listen(hp->first, hp->second); !s) {
    std::fprintf(stderr, "corral-target: cannot listen on %s: %s\n", listen.c_str(),
                 s.message().c_str());
    return 1;
  }
  std::printf("listening on %s:%d\n", hp->first.c_str(), target.port());
  std::fflush(stdout);

  uv_signal_t sigs[2];
  int signums[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; ++i) {
    uv_signal_init(loop, &sigs[i]);
    sigs[i].data = &target;
    uv_signal_start(
        &sigs[i],
        [](uv_signal_t* h, int) {
          static_cast<corral::target::Target*>(h->data)->close();
          uv_stop(h->loop);
        },
        signums[i]);
  }
  uv_run(loop, UV_RUN_DEFAULT);
  return 0;
}

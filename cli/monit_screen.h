// The terminal as `corral monit` uses it, through ncurses: whole screens of lines, and waiting
// for a key, a resize or a request to quit. While a Screen is open, SIGINT, SIGTERM and SIGHUP
// only ask it to quit (so Ctrl-C leaves through the same door as q); destroying it restores the
// terminal and those signals' previous handlers. At most one per process, on the main thread.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "cli/monit_view.h"
#include "shared/status.h"

struct screen;  // ncurses' SCREEN

namespace corral::cli {

class Screen {
 public:
  // Takes over the terminal on stdin and stdout. Errors: kInvalidArgument when stdout is not a
  // terminal or ncurses does not know $TERM.
  static Result<std::unique_ptr<Screen>> open();
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // The current size, and whether the locale's characters are UTF-8 (for ▁▂▃ and box drawing).
  MonitLayout layout() const;
  // Replaces what the screen shows with `lines` (those past the bottom are left out).
  void draw(const std::vector<MonitLine>& lines);

  enum class Event { kTimeout, kResize, kQuit };
  // Waits up to `timeout` for q (or Q), a quit signal or a resize; other keys are ignored.
  Event wait(std::chrono::milliseconds timeout);

 private:
  Screen(::screen* screen, bool utf8, bool colors);

  ::screen* screen_;
  bool utf8_;
  bool colors_;
};

}  // namespace corral::cli

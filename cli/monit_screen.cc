// Built outside the cli library's unity batches: curses.h defines macros (clear, erase, move,
// timeout, OK, ERR) that would rewrite the code of the files batched after it.
#include "cli/monit_screen.h"

#include <langinfo.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include <curses.h>

namespace corral::cli {
namespace {

constexpr int kQuitSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr short kAlertPair = 1;
// How long one wait for a key lasts at most, so that a quit signal is seen soon.
constexpr int kKeySliceMs = 100;

volatile std::sig_atomic_t quit_requested = 0;
struct sigaction previous_actions[std::size(kQuitSignals)];

void on_quit_signal(int) { quit_requested = 1; }

// Without SA_RESTART: the signal interrupts the wait for a key.
void catch_quit_signals() {
  quit_requested = 0;
  struct sigaction action {};
  action.sa_handler = on_quit_signal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kQuitSignals); ++i) {
    ::sigaction(kQuitSignals[i], &action, &previous_actions[i]);
  }
}

void restore_quit_signals() {
  for (size_t i = 0; i < std::size(kQuitSignals); ++i) {
    ::sigaction(kQuitSignals[i], &previous_actions[i], nullptr);
  }
}

}  // namespace

Result<std::unique_ptr<Screen>> Screen::open() {
  if (!::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO)) {
    return invalid_argument(
        "monit draws on a terminal, and stdin or stdout is not one; 'corral status' and "
        "'corral runs' print the same once");
  }
  // LC_CTYPE only: numbers keep the C locale's decimal point.
  std::setlocale(LC_CTYPE, "");
  const bool utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  // Before ncurses starts: it leaves a signal alone when a handler is already installed.
  catch_quit_signals();
  ::screen* s = newterm(nullptr, stdout, stdin);
  // A terminal that cannot move its cursor (TERM=dumb) would show a jumble.
  char* move_cursor = s != nullptr ? tigetstr("cup") : nullptr;
  if (move_cursor == nullptr || move_cursor == reinterpret_cast<char*>(-1)) {
    if (s != nullptr) {
      endwin();
      delscreen(s);
    }
    restore_quit_signals();
    const char* term = std::getenv("TERM");
    return invalid_argument(std::string("cannot draw on terminal type '") +
                            (term != nullptr ? term : "") + "' (TERM)");
  }
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  const bool colors = has_colors();
  if (colors) {
    start_color();
    use_default_colors();
    init_pair(kAlertPair, COLOR_RED, -1);
  }
  return std::unique_ptr<Screen>(new Screen(s, utf8, colors));
}

Screen::Screen(::screen* screen, bool utf8, bool colors)
    : screen_(screen), utf8_(utf8), colors_(colors) {}

Screen::~Screen() {
  endwin();
  delscreen(screen_);
  restore_quit_signals();
}

MonitLayout Screen::layout() const {
  return {static_cast<size_t>(std::max(COLS, 1)), static_cast<size_t>(std::max(LINES, 1)), utf8_};
}

void Screen::draw(const std::vector<MonitLine>& lines) {
  werase(stdscr);
  for (size_t row = 0; row < lines.size() && row < static_cast<size_t>(LINES); ++row) {
    attr_t attrs = A_NORMAL;
    if (lines[row].tone == MonitLine::Tone::kTitle) attrs = A_BOLD;
    if (lines[row].tone == MonitLine::Tone::kAlert) {
      attrs = colors_ ? A_BOLD | COLOR_PAIR(kAlertPair) : A_BOLD;
    }
    wattrset(stdscr, attrs);
    // A line as wide as the screen fails to move the cursor past its end; it is drawn anyway.
    mvwaddstr(stdscr, static_cast<int>(row), 0, lines[row].text.c_str());
  }
  wattrset(stdscr, A_NORMAL);
  wrefresh(stdscr);
}

Screen::Event Screen::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!quit_requested) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Event::kTimeout;
    wtimeout(stdscr, static_cast<int>(std::min<long>(left.count(), kKeySliceMs)));
    const int key = wgetch(stdscr);
    if (key == 'q' || key == 'Q' || key == 3 /* Ctrl-C with ISIG off */) return Event::kQuit;
    if (key == KEY_RESIZE) return Event::kResize;
  }
  return Event::kQuit;
}

}  // namespace corral::cli

// Shell completion. The scripts that `corral completion bash|zsh|fish` prints only pass the
// command line back to `corral completion --words -- WORDS...`; everything that decides what to
// offer is here, read from the verb registry's descriptions (cli/verb_spec.h), so that a new verb
// or flag completes without anyone touching this file.
//
// Pure functions over their arguments, apart from the file listing (complete_path) and the
// daemon lookup (daemon_sources). Any thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/verb.h"
#include "cli/verb_spec.h"

namespace corral::cli {

// What completion cannot read from the command line: ids only the daemon knows. Each is called
// at most once per completion, and only when the word needs it; each returns an empty list when
// no daemon answers.
struct CompletionSources {
  std::function<std::vector<std::string>()> run_ids;
  std::function<std::vector<std::string>()> load_ids;
};

// The candidates for the last word of `words`, one string each, in the order a user reads them
// (verbs by name, flags as the verb adds them, files sorted). `words` are the command line up
// to the cursor as the shell split it: the program's name first and the word being completed
// (maybe "") last. Only candidates that start with that word are returned.
std::vector<std::string> complete(const std::vector<std::string>& words,
                                  const std::vector<CommandSpec>& verbs,
                                  const CompletionSources& sources);

// Which files a path completes to.
enum class PathKind {
  kAnyFile,   // every file and directory
  kScenario,  // *.json and directories
  kDirectory  // directories only
};

// The entries of `word`'s directory part (the working directory when it has none, "~/" read as
// $HOME) whose names start with the rest, each as `word` would read completed: the directory
// part as typed, then the name, with a trailing '/' for a directory. Hidden entries only when
// the rest starts with '.'. Sorted; empty when the directory cannot be read.
std::vector<std::string> complete_path(const std::string& word, PathKind kind);

// The context the command being completed would run with: `base` (from the environment, as for
// any verb) with the home given by a "--home DIR" among `words`.
Context completion_context(const std::vector<std::string>& words, Context base);

// Sources that ask the daemon of `ctx` (GET /runs, GET /loads), waiting at most ~300 ms per
// question. A daemon that does not answer, or answers an error, gives no ids; nothing is printed.
CompletionSources daemon_sources(const Context& ctx);

// The shells there is a script for: "bash", "zsh", "fish".
std::vector<std::string> completion_shells();

// The script that makes `shell` complete corral's command lines by calling back
// `corral completion --words -- WORDS...`, or "" for a shell not in completion_shells().
std::string completion_script(const std::string& shell);

}  // namespace corral::cli

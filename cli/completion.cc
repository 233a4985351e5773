#include "cli/completion.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "cli/api.h"
#include "shared/api/loads.h"
#include "shared/api/runs.h"

namespace corral::cli {
namespace {

using Words = std::vector<std::string>;

// How long completion waits for the daemon: a Tab must not hang when it is busy or gone.
constexpr long kDaemonTimeoutMs = 300;

// What `corral` itself takes before the verb (cli/entry.cc's main).
const Words kGlobalOptions = {"--home", "--help", "--version"};
// CLI11 gives every verb and subcommand a --help, which describe() leaves out.
const Words kHelpOptions = {"--help", "-h"};

// Where the word being completed stands, read from the words before it.
struct WordCursor {
  const CommandSpec* verb = nullptr;     // null: the word may be the verb
  const CommandSpec* command = nullptr;  // the verb, or its subcommand once one is typed
  const OptionSpec* value_of = nullptr;  // the word is this option's value
  size_t positionals = 0;                // `command`'s positionals before the word
  bool after_dashes = false;             // after "--": every word is a positional
  bool unknown_verb = false;             // nothing to offer
  std::vector<const OptionSpec*> given;  // options already on the line
};

bool names_one_of(const Words& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const CommandSpec* command_named(const std::vector<CommandSpec>& commands,
                                 const std::string& name) {
  for (const CommandSpec& c : commands) {
    if (c.name == name || names_one_of(c.aliases, name)) return &c;
  }
  return nullptr;
}

// --home before the verb, as cli/entry.cc's main reads it.
const OptionSpec& global_home() {
  static const OptionSpec home = [] {
    OptionSpec o;
    o.names = {"--home"};
    o.takes_value = true;
    o.value = "DIR";
    return o;
  }();
  return home;
}

// The option that `word` names: "--out", "--out=x", "-n" or "-n3", looked up in the command,
// then in its verb (a subcommand's line may hold the verb's --home). Sets `attached` when the
// word holds the value too.
const OptionSpec* option_named(const WordCursor& at, const std::string& word, bool& attached) {
  const bool is_long = word.starts_with("--");
  const std::string name = is_long ? word.substr(0, word.find('=')) : word.substr(0, 2);
  attached = is_long ? name.size() < word.size() : word.size() > 2;
  if (at.verb == nullptr) return name == "--home" ? &global_home() : nullptr;
  for (const CommandSpec* c : {at.command, at.verb}) {
    for (const OptionSpec& o : c->options) {
      if (!o.positional && names_one_of(o.names, name)) return &o;
    }
  }
  return nullptr;
}

// Moves the cursor past one completed word. A lone "=" after an option is bash's split of
// "--opt=value" (COMP_WORDBREAKS holds '='): the value still follows.
void step_over(WordCursor& at, const std::string& word, const std::vector<CommandSpec>& verbs) {
  if (at.value_of != nullptr) {
    if (word != "=") at.value_of = nullptr;
    return;
  }
  if (!at.after_dashes && at.verb != nullptr && word == "--") {
    at.after_dashes = true;
  } else if (!at.after_dashes && word.size() > 1 && word[0] == '-') {
    bool attached = false;
    const OptionSpec* o = option_named(at, word, attached);
    if (o != nullptr) at.given.push_back(o);
    if (o != nullptr && o->takes_value && !attached) at.value_of = o;
  } else if (at.verb == nullptr) {
    at.verb = at.command = command_named(verbs, word);
    at.unknown_verb = at.verb == nullptr;
  } else if (const CommandSpec* sub =
                 at.command == at.verb ? command_named(at.verb->subcommands, word) : nullptr) {
    at.command = sub;
  } else {
    ++at.positionals;
  }
}

void append_words(Words& out, const Words& more) {
  out.insert(out.end(), more.begin(), more.end());
}

Words ids_from(const std::function<Words()>& source) { return source ? source() : Words{}; }

Words command_names(const std::vector<CommandSpec>& commands) {
  Words out;
  for (const CommandSpec& c : commands) {
    out.push_back(c.name);
    append_words(out, c.aliases);
  }
  return out;
}

// The flags of the command being typed, leaving out those already given once that may not be
// given again.
Words flag_candidates(const WordCursor& at) {
  if (at.verb == nullptr) return kGlobalOptions;
  Words out;
  for (const CommandSpec* c : {at.command, at.verb}) {
    for (const OptionSpec& o : c->options) {
      const bool given = std::find(at.given.begin(), at.given.end(), &o) != at.given.end();
      if (o.positional || (given && !o.repeatable)) continue;
      for (const std::string& name : o.names) {
        if (!names_one_of(out, name)) out.push_back(name);
      }
    }
    if (at.command == at.verb) break;
  }
  append_words(out, kHelpOptions);
  return out;
}

// The values of an option: its fixed set, else what its value type names ("FILE", "DIR",
// "LOAD|FILE", "FILE|URL"), else nothing.
Words value_candidates(const OptionSpec& o, const std::string& word,
                       const CompletionSources& sources) {
  if (!o.choices.empty()) return o.choices;
  Words out;
  size_t start = 0;
  while (start <= o.value.size()) {
    const size_t bar = std::min(o.value.find('|', start), o.value.size());
    const std::string kind = o.value.substr(start, bar - start);
    if (kind == "LOAD") append_words(out, ids_from(sources.load_ids));
    if (kind == "FILE") append_words(out, complete_path(word, PathKind::kAnyFile));
    if (kind == "DIR") append_words(out, complete_path(word, PathKind::kDirectory));
    start = bar + 1;
  }
  return out;
}

// What a positional takes, by its name in the verbs' setup(): `corral cancel run`, `corral load
// file`, `corral report load`, `corral compare base test`, `corral help verb`.
Words positional_candidates(const OptionSpec& p, const std::string& word,
                            const std::vector<CommandSpec>& verbs,
                            const CompletionSources& sources) {
  if (!p.choices.empty()) return p.choices;
  const std::string& name = p.names.front();
  if (name == "run") return ids_from(sources.run_ids);
  if (name == "file") return complete_path(word, PathKind::kScenario);
  if (name == "verb") return command_names(verbs);
  Words out;
  if (name == "load" || name == "base" || name == "test") {  // a kept test, or a file --out wrote
    append_words(out, ids_from(sources.load_ids));
    append_words(out, complete_path(word, PathKind::kAnyFile));
  }
  return out;
}

const OptionSpec* nth_positional(const CommandSpec& c, size_t n) {
  for (const OptionSpec& o : c.options) {
    if (o.positional && n-- == 0) return &o;
  }
  return nullptr;
}

Words candidates_at(const WordCursor& at, const std::string& word,
                    const std::vector<CommandSpec>& verbs, const CompletionSources& sources) {
  if (at.unknown_verb) return {};
  if (at.value_of != nullptr) {
    return word == "=" ? Words{} : value_candidates(*at.value_of, word, sources);
  }
  if (!at.after_dashes && word.starts_with("--") && word.find('=') != std::string::npos) {
    bool attached = false;  // "--out=rep": the values of --out, each behind "--out="
    const OptionSpec* o = option_named(at, word, attached);
    if (o == nullptr || !o->takes_value) return {};
    const std::string head = word.substr(0, word.find('=') + 1);
    Words out;
    for (const std::string& v : value_candidates(*o, word.substr(head.size()), sources)) {
      out.push_back(head + v);
    }
    return out;
  }
  if (!at.after_dashes && word.starts_with('-')) return flag_candidates(at);
  if (at.verb == nullptr) return command_names(verbs);
  if (at.command == at.verb && !at.verb->subcommands.empty()) {
    return command_names(at.verb->subcommands);
  }
  const OptionSpec* p = nth_positional(*at.command, at.positionals);
  return p == nullptr ? Words{} : positional_candidates(*p, word, verbs, sources);
}

// "~" and "~/..." as the shell would have read them, had the word been complete.
std::string expand_tilde(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home == nullptr || !(path == "~" || path.starts_with("~/"))) return path;
  return home + path.substr(1);
}

// Scenario and config files are JSON.
bool is_scenario_name(const std::string& name) {
  return name.size() > 5 && name.ends_with(".json");
}

}  // namespace

std::vector<std::string> complete(const std::vector<std::string>& words,
                                  const std::vector<CommandSpec>& verbs,
                                  const CompletionSources& sources) {
  const std::string word = words.size() < 2 ? "" : words.back();
  WordCursor at;
  for (size_t i = 1; i + 1 < words.size(); ++i) step_over(at, words[i], verbs);
  Words out;
  for (std::string& c : candidates_at(at, word, verbs, sources)) {
    if (c.starts_with(word)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> complete_path(const std::string& word, PathKind kind) {
  const size_t slash = word.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : word.substr(0, slash + 1);
  const std::string rest = word.substr(dir.size());
  std::error_code ec;
  std::filesystem::directory_iterator it(dir.empty() ? "." : expand_tilde(dir), ec);
  Words out;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(rest) || (name[0] == '.' && !rest.starts_with('.'))) continue;
    std::error_code type_ec;  // a dangling link is a file that cannot be read: still offered
    if (it->is_directory(type_ec)) {
      out.push_back(dir + name + "/");
    } else if (kind == PathKind::kAnyFile ||
               (kind == PathKind::kScenario && is_scenario_name(name))) {
      out.push_back(dir + name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Context completion_context(const std::vector<std::string>& words, Context base) {
  std::string home;
  for (size_t i = 1; i + 1 < words.size(); ++i) {
    if (words[i] == "--") break;
    if (words[i].starts_with("--home=")) home = words[i].substr(7);
    if (words[i] != "--home") continue;
    const size_t value = words[i + 1] == "=" ? i + 2 : i + 1;  // bash's "--home" "=" "DIR"
    if (value + 1 < words.size()) home = words[value];
  }
  if (home.empty()) return base;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(expand_tilde(home), ec);
  base.home = ec ? home : absolute.string();
  base.home_given = true;
  return base;
}

CompletionSources daemon_sources(const Context& ctx) {
  CompletionSources sources;
  sources.run_ids = [ctx] {
    Words ids;
    auto answer = get_answer(Api(ctx, kDaemonTimeoutMs), "/runs", &api::runs_from_json);
    if (answer) {
      for (const api::RunSummary& run : answer->runs) ids.push_back(run.id);
    }
    return ids;
  };
  sources.load_ids = [ctx] {
    Words ids;
    auto answer = get_answer(Api(ctx, kDaemonTimeoutMs), "/loads", &api::loads_from_json);
    if (answer) {
      for (const api::LoadAnswer& test : *answer) ids.push_back(test.id);
    }
    return ids;
  };
  return sources;
}

}  // namespace corral::cli

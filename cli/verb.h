// The CLI's verb registry. A verb is one file under cli/verbs/ that defines a class deriving
// from Verb and registers it with CORRAL_REGISTER_VERB; nothing else needs to change to add one.
// `corral help` and `corral --help` list the registered verbs.
//
// Registration happens in static initialisers (cli/ is an OBJECT library, so the linker keeps
// every verb). verbs() may be called from main() on, single-threaded.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace corral::cli {

// What every verb gets, whatever its own options.
struct Context {
  std::string home;         // --home, else $CORRAL_HOME, else ~/.corral
  bool home_given = false;  // --home was on the command line
  // $CORRAL_API, "HOST:PORT": talk to that daemon over TCP instead of the home's socket, with
  // $CORRAL_API_TOKEN as the bearer token.
  std::string api_address;
  std::string api_token;

  std::string socket_path() const { return home + "/corral.sock"; }
  std::string logs_dir() const { return home + "/logs"; }
};

// One invocation of a verb: setup() binds options to members, then run() is called once if the
// command line parsed. Output goes to std::cout and std::cerr.
class Verb {
 public:
  virtual ~Verb() = default;
  // Adds the verb's options and positionals to its subcommand (the global --home is added by
  // the caller).
  virtual void setup(CLI::App& app) = 0;
  // Returns the process exit code (shared/exit_codes.h).
  virtual int run(const Context& ctx) = 0;
};

struct VerbInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string summary;  // one line, lower case, no final period
  std::function<std::unique_ptr<Verb>()> make;
};

// Adds a verb; aborts on a duplicate name or alias (a programming error). Returns true so it
// can initialise a static.
bool register_verb(VerbInfo info);

// Every registered verb, sorted by name.
std::vector<const VerbInfo*> verbs();

// The verb called `name` or with `name` as an alias, or nullptr.
const VerbInfo* find_verb(const std::string& name);

}  // namespace corral::cli

// CORRAL_REGISTER_VERB(StatusVerb, "status", "show the workers", "ls", "list");
// at namespace scope in the verb's file; the arguments after the summary are aliases. The
// flag's name is unique in a unity build too (__COUNTER__ counts across the whole unit).
#define CORRAL_REGISTER_VERB(Type, name, summary, ...)                                       \
  [[maybe_unused]] static const bool CORRAL_VERB_CONCAT(corral_verb_registered_, __COUNTER__) = \
      ::corral::cli::register_verb(::corral::cli::VerbInfo{                                  \
          name, {__VA_ARGS__}, summary, []() -> std::unique_ptr<::corral::cli::Verb> {       \
            return std::make_unique<Type>();                                                 \
          }});
#define CORRAL_VERB_CONCAT(a, b) CORRAL_VERB_CONCAT_INNER(a, b)
#define CORRAL_VERB_CONCAT_INNER(a, b) a##b

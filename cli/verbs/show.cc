// `corral show RUN [INSTANCE]` or `corral show RUN/INSTANCE`: one run's counts, durations and
// failures; or one instance's step history (RUN/KEY: by its data row's key). `corral show LOAD` (an
// id like l3-7156): a load test's summary.
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/load_view.h"
#include "cli/runs_view.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

// `text` for a URL path segment: unreserved characters as they are, the rest as %XX.
std::string percent_encoded(std::string_view text) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

class ShowVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("run", run_,
                   "run id, RUN/INSTANCE, RUN/KEY (a --data run's key column), or a load test's id")
        ->required();
    app.add_option("instance", instance_, "instance number")->check(CLI::NonNegativeNumber);
    app.add_flag("--json", json_, "print the API's JSON");
  }
  int run(const Context& ctx) override {
    std::string key;  // RUN/KEY: the instance of a run over data rows whose key column is KEY
    if (size_t slash = run_.find('/'); slash != std::string::npos) {
      const std::string n = run_.substr(slash + 1);
      long i = -1;
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), i);
      if (n.empty() || instance_ >= 0) {
        std::cerr << "corral: show " << run_ << ": expected RUN, RUN N, RUN/N or RUN/KEY\n";
        return kExitUsage;
      }
      if (ec != std::errc() || end != n.data() + n.size() || i < 0) key = n;
      run_.resize(slash);
      instance_ = key.empty() ? i : 0;
    }
    const Api api(ctx);
    if (run_.rfind('l', 0) == 0) {  // a load test's id: it has no instances to show
      if (instance_ >= 0) {
        std::cerr << "corral: show: " << run_ << " is a load test, which has no instances; "
                  << "corral show " << run_ << " prints it\n";
        return kExitUsage;
      }
      return show_load(api);
    }
    std::string path = "/runs/" + run_;
    if (!key.empty()) {
      path += "/instances/" + percent_encoded(key);
    } else if (instance_ >= 0) {
      path += "/instances/" + std::to_string(instance_);
    }
    auto answer = api.get(path);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    if (json_) {
      std::cout << answer->dump(2) << "\n";
      return 0;
    }
    if (instance_ >= 0) {
      auto in = read_answer(path, *answer, &api::instance_from_json);
      if (!in) return fail(in.status().message());
      const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
      std::cout << render_instance(*in, style);
      return 0;
    }
    auto run = read_answer(path, *answer, &api::run_detail_from_json);
    if (!run) return fail(run.status().message());
    std::cout << render_run(*run);
    return 0;
  }

 private:
  int show_load(const Api& api) const {
    auto answer = api.get("/loads/" + run_);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    if (json_) {
      std::cout << answer->dump(2) << "\n";
      return 0;
    }
    auto test = read_answer("/loads/" + run_, *answer, &api::load_from_json);
    if (!test) return fail(test.status().message());
    std::cout << render_load_summary(*test);
    return 0;
  }

  std::string run_;
  long instance_ = -1;
  bool json_ = false;
};

CORRAL_REGISTER_VERB(ShowVerb, "show", "show a run, one instance's steps, or a load test")

}  // namespace
}  // namespace corral::cli

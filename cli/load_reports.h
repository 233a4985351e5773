// What `corral load`, `corral report` and `corral compare` share: a load test named by its id
// (a test the daemon ran or keeps) or by the file `--out` wrote, and the reports written from
// one (--out JSON, --html, --junit).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/api.h"
#include "cli/junit.h"
#include "shared/api/loads.h"
#include "shared/status.h"

namespace corral::cli {

// A test and GET /loads/<id>'s body for it.
struct LoadRecord {
  api::LoadAnswer test;
  nlohmann::json body;
};

// `ref` is a file (what --out wrote) when one of that name exists, else a load test's id asked
// of the daemon. A file that is not a load test's record is an error naming it.
Result<LoadRecord> load_record(const Api& api, const std::string& ref);

// The tests `refs` names, joined by commas (repeats of one test, for a comparison), each as
// load_record() reads it. A test still running is an error: it has no result to compare yet.
Result<std::vector<api::LoadAnswer>> load_records(const Api& api, const std::string& refs);

// The reports to write, by file; empty ones are not written.
struct LoadReports {
  std::string out, html, junit;
  bool any() const { return !out.empty() || !html.empty() || !junit.empty(); }
};

// Writes each report asked for, saying "out        : FILE" and so on to `say`; `extra` are
// JUnit cases after the thresholds' (a comparison with a baseline). "" or what failed.
std::string write_load_reports(const LoadReports& reports, const LoadRecord& record,
                               const std::vector<JunitCase>& extra, std::ostream& say);

// Writes `text` to `path`, replacing it; false when it cannot.
bool write_file(const std::string& path, const std::string& text);

}  // namespace corral::cli

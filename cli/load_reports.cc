#include "cli/load_reports.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "cli/html_report.h"
#include "cli/load_view.h"

namespace corral::cli {

using nlohmann::json;

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

Result<LoadRecord> load_record(const Api& api, const std::string& ref) {
  struct stat st {};
  if (::stat(ref.c_str(), &st) != 0) {
    auto body = api.get("/loads/" + ref);
    if (!body) return body.status();
    auto test = read_answer("/loads/" + ref, *body, &api::load_from_json);
    if (!test) return test.status();
    return LoadRecord{std::move(*test), std::move(*body)};
  }
  std::ifstream in(ref);
  std::stringstream text;
  text << in.rdbuf();
  json body = json::parse(text.str(), nullptr, false);
  if (!in || body.is_discarded() || !body.is_object()) {
    return invalid_argument(ref + ": not a load test's record (expected the JSON --out writes)");
  }
  auto test = api::load_from_json(body);
  if (!test || test->id.empty()) {
    return invalid_argument(ref + ": not a load test's record: " +
                            (test ? std::string("it has no id") : test.status().message()));
  }
  return LoadRecord{std::move(*test), std::move(body)};
}

Result<std::vector<api::LoadAnswer>> load_records(const Api& api, const std::string& refs) {
  std::vector<api::LoadAnswer> out;
  size_t from = 0;
  for (;;) {
    size_t comma = refs.find(',', from);
    std::string ref = refs.substr(from, comma == std::string::npos ? comma : comma - from);
    if (ref.empty()) return invalid_argument("\"" + refs + "\": an empty test name");
    auto record = load_record(api, ref);
    if (!record) {
      if (record.status().code() == Code::kUnavailable) return record.status();
      return Status(record.status().code(), ref + ": " + record.status().message());
    }
    if (record->test.state == "running") {
      return invalid_argument("load test " + record->test.id + " is still running");
    }
    out.push_back(std::move(record->test));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

std::string write_load_reports(const LoadReports& reports, const LoadRecord& record,
                               const std::vector<JunitCase>& extra, std::ostream& say) {
  if (!reports.out.empty()) {
    if (!write_file(reports.out, record.body.dump(2) + "\n")) {
      return "--out " + reports.out + ": cannot write the summary";
    }
    say << "out        : " << reports.out << "\n";
  }
  if (!reports.html.empty()) {
    if (!write_file(reports.html, render_load_html(record.test))) {
      return "--html " + reports.html + ": cannot write the report";
    }
    say << "html       : " << reports.html << "\n";
  }
  if (!reports.junit.empty()) {
    if (!write_file(reports.junit, render_load_junit(record.test, extra))) {
      return "--junit " + reports.junit + ": cannot write the report";
    }
    say << "junit      : " << reports.junit << "\n";
  }
  return "";
}

}  // namespace corral::cli

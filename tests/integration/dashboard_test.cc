// The web dashboard on the API listener: headless Chromium opens it against a daemon with a run
// in progress and reads the page it built (tests/html/check_dashboard.py), with and without the
// API token; its files and the log tail it shows, over HTTP.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

const std::string kToken = "dash-token-7c2e";

// One HTTP exchange over TCP, as a browser would make it, taken apart.
struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  std::string header(const std::string& lower_case_name) const {
    auto it = headers.find(lower_case_name);
    return it != headers.end() ? it->second : "";
  }
};

Answer http_get(int port, const std::string& path, const std::string& extra_headers = "") {
  const std::string raw = raw_tcp_exchange(
      "127.0.0.1", port,
      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "Connection: close\r\n\r\n");
  Answer a;
  const size_t end = raw.find("\r\n\r\n");
  INFO("answer to GET " << path << ": " << raw.substr(0, 400));
  REQUIRE(end != std::string::npos);
  std::istringstream head(raw.substr(0, end));
  std::string line;
  std::getline(head, line);
  a.status = std::stoi(line.substr(9, 3));
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    a.headers[name] = line.substr(colon + 2);
  }
  a.body = raw.substr(end + 4);
  return a;
}

Json json_of(const Answer& a) { return Json::parse(a.body, nullptr, false); }

bool chromium_installed() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (::access(p, X_OK) == 0) return true;
  }
  return false;
}

// Runs check_dashboard.py; true when it passed. Chromium missing (exit 2 without a browser
// installed) skips the rest of the test with a warning; any other failure fails it.
bool chromium_check(const TempHome& home, const std::vector<std::string>& args) {
  std::vector<std::string> all = {CORRAL_DASHBOARD_CHECK};
  all.insert(all.end(), args.begin(), args.end());
  CliResult r = run_program("/usr/bin/python3", all, home.path(), {}, seconds(150));
  INFO(r.describe());
  if (r.exit_code == 2 && !chromium_installed()) {
    WARN("chromium is not installed (tools/install-deps installs it): the browser check is skipped");
    return false;
  }
  std::cout << r.out;
  CHECK(r.exit_code == 0);
  return r.exit_code == 0;
}

// The job-poll scenario whose first step expects a status the job API never answers.
Json failing_scenario() {
  Json s = job_poll_scenario("dash-fails", 1000, "500ms");
  s["steps"][0]["expect"] = Json::array({{{"status", 418}}});
  return s;
}

}  // namespace

TEST_CASE("dashboard: Chromium shows the workers, the runs with progress and failures, the logs") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  // A run's name is the scenario author's: markup in it must reach the page as text.
  const std::string name = "dash-polls <b id=\"injected\">bold</b>";
  const std::string polling = submit_run(d, job_poll_scenario(name, 120000, "500ms"), 200, api);
  const std::string failing = submit_run(d, failing_scenario(), 3, api);
  d.wait_until([&] { return run_of(d, polling)["counts"].value("running", 0) == 200; },
               seconds(30), "every instance of the polling run to run");
  wait_run_finished(d, failing, seconds(30));

  // The master measures each worker's CPU use every second: the page shows it once it has.
  d.wait_until(
      [&] {
        Json list = d.workers();
        return std::all_of(list.begin(), list.end(),
                           [](const Json& w) { return w["cpu_percent"].is_number(); });
      },
      seconds(10), "the CPU use of both workers");
  Json workers = Json::array();
  for (const Json& w : d.workers()) {
    workers.push_back({{"slot", w["slot"]}, {"pid", w["pid"]}, {"cpu", true}});
  }
  REQUIRE(workers.size() == 2);
  const Json expect = {
      {"workers", workers},
      {"runs",
       {{{"id", polling}, {"scenario", name}, {"state", "running"}, {"progress", "0/200 0%"}},
        {{"id", failing},
         {"scenario", "dash-fails"},
         {"state", "finished"},
         {"progress", "3/3 100%"},
         {"badge", "s-failed"}}}},  // red: none passed
      {"texts", {"3 × step 0 (start): "}},
      {"log_lines", {"run " + polling + ": 200 instances of", "worker 1 ready"}},
      {"absent_ids", {"injected"}}};
  std::ofstream(home.file("expect.json")) << expect.dump();

  const std::string artifacts = CORRAL_TEST_ARTIFACTS;
  std::filesystem::create_directories(artifacts);
  const std::string png = artifacts + "/dashboard.png";
  std::filesystem::remove(png);
  const std::string url = "http://127.0.0.1:" + std::to_string(tcp_port(d)) + "/";
  if (chromium_check(home, {url, "--expect", home.file("expect.json"), "--screenshot", png})) {
    CHECK(std::filesystem::file_size(png) > 10000);
  }
}

TEST_CASE("dashboard: Chromium shows a run's instances filtered by state and an instance's steps") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string failing = submit_run(d, failing_scenario(), 3, api);
  wait_run_finished(d, failing, seconds(30));
  const std::string base = "http://127.0.0.1:" + std::to_string(tcp_port(d)) + "/#/runs/" + failing;
  const std::string reason = "status was 201, expected 418";
  auto check = [&](const std::string& url, const Json& expect) {
    std::ofstream(home.file("expect.json"), std::ios::trunc) << expect.dump();
    return chromium_check(home, {url, "--expect", home.file("expect.json")});
  };

  const Json failed = {{"instances", {{{"i", 0}, {"state", "failed"}},
                                      {{"i", 1}, {"state", "failed"}},
                                      {{"i", 2}, {"state", "failed"}}}},
                       {"texts", {"failed 3", reason}}};
  if (!check(base + "?state=failed", failed)) return;
  CHECK(check(base + "?state=passed",
              {{"instances", Json::array()}, {"texts", {"no passed instances", "passed 0"}}}));
  CHECK(check(base + "/1", {{"steps", {{{"step", 0}, {"state", "failed"}, {"reason", reason}}}},
                            {"texts", {"instance 1"}}}));
}

TEST_CASE("dashboard: Chromium shows a running load test: its charts with events, its thresholds") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // Two stages (a stage mark at 3 s) and thresholds that the 5 ms answers and the failing second
  // step cross (threshold marks once the test has run 5 s).
  const std::string why = "expect: status was 503, expected 200";
  const Json body = {
      {"scenario",
       {{"name", "dash-load"},
        {"steps",
         Json::array({{{"name", "get"}, {"request", {{"url", api.base() + "/delay?ms=5"}}}},
                      {{"name", "refused"},
                       {"request", {{"url", api.base() + "/fail?status=503"}}},
                       {"expect", {{"status", 200}}}}})}}},
      {"load",
       {{"stages",
         Json::array({{{"duration", "3s"}, {"target", 2}}, {{"duration", "30s"}, {"target", 4}}})},
        {"thresholds", {{"latency", {"p99 < 1ms"}}, {"errors", {"rate < 1%"}}}}}}};
  const ApiResponse started = d.api("POST", "/loads", body.dump());
  REQUIRE(started.status == 201);
  const std::string id = started.json["load"];
  Json now;
  d.wait_until(
      [&] {
        now = d.api("GET", "/loads/" + id).json;
        return now["events"].size() >= 2 && now["reason_traces"].contains(why);
      },
      seconds(20), "the stage and threshold events, and a failure's trace");
  const std::string artifacts = CORRAL_TEST_ARTIFACTS;
  std::filesystem::create_directories(artifacts);
  const std::string png = artifacts + "/dashboard-load.png";
  std::filesystem::remove(png);
  const std::string root = "http://127.0.0.1:" + std::to_string(tcp_port(d)) + "/";
  const Json expect = {{"load_page",
                        {{"state", "running"},
                         {"charts", 3},
                         {"marks", {"stage", "threshold"}},
                         {"thresholds",
                          {{{"name", "latency: p99 < 1ms"}, {"ok", false}},
                           {{"name", "errors: rate < 1%"}, {"ok", false}}}}}},
                       {"texts",
                        {"dash-load", "latency: p99 < 1ms crossed", "stage 2 of 2: to 4 VUs", why,
                         now["reason_traces"][why]}}};
  std::ofstream(home.file("load.json")) << expect.dump();
  if (!chromium_check(home, {root + "#/loads/" + id, "--expect", home.file("load.json"),
                             "--screenshot", png})) {
    return;
  }
  std::ofstream(home.file("overview.json"))
      << Json{{"loads", {{{"id", id}, {"state", "running"}}}}}.dump();
  CHECK(chromium_check(home, {root, "--expect", home.file("overview.json")}));
  CHECK(d.api("DELETE", "/loads/" + id).status == 200);
}

TEST_CASE("dashboard: with a token, the page loads without it, its data calls need it") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"api_token", kToken}}));
  d.wait_ready(1);
  const int port = tcp_port(d);
  const std::string bearer = "Authorization: Bearer " + kToken + "\r\n";

  // The page and its files hold no data: open.
  CHECK(http_get(port, "/").status == 200);
  CHECK(http_get(port, "/ui/app.js").status == 200);
  CHECK(http_get(port, "/ui/app.css").status == 200);
  // What the page asks for is not.
  for (const char* path : {"/workers", "/runs", "/logs", "/runs/r1-x/instances", "/ui/../workers"}) {
    const Answer a = http_get(port, path);
    INFO(path << ": " << a.body);
    CHECK(a.status == 401);
    CHECK(a.header("www-authenticate") == "Bearer");
  }
  CHECK(http_get(port, "/workers", bearer).status == 200);
  CHECK(http_get(port, "/logs", bearer).status == 200);

  // In a browser: the page asks for the token and shows no data without it.
  chromium_check(home, {"http://127.0.0.1:" + std::to_string(port) + "/", "--token-prompt"});
}

TEST_CASE("dashboard: the page and its files answer with their type, an ETag and 304, to HEAD too, 404 else") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  const int port = tcp_port(d);

  const Answer page = http_get(port, "/");
  REQUIRE(page.status == 200);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  CHECK(page.header("cache-control") == "no-cache");
  CHECK_THAT(page.header("content-security-policy"), Catch::Contains("default-src 'none'"));
  CHECK_THAT(page.body, Catch::Contains("<script type=\"module\" src=\"ui/app.js\"></script>"));
  CHECK_THAT(page.body, Catch::Contains("<link rel=\"stylesheet\" href=\"ui/app.css\">"));
  const std::string etag = page.header("etag");
  REQUIRE(etag.size() > 2);
  const Answer again = http_get(port, "/", "If-None-Match: " + etag + "\r\n");
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  // HEAD answers as GET, with the same length and no body.
  const std::string head = raw_tcp_exchange(
      "127.0.0.1", port, "HEAD / HTTP/1.1\r\nHost: corral\r\nConnection: close\r\n\r\n");
  INFO("HEAD answer: " << head);
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK_THAT(head, Catch::Contains("Content-Length: " + std::to_string(page.body.size()) + "\r\n"));
  CHECK(head.size() == head.find("\r\n\r\n") + 4);

  // Every module the page loads, following the imports from app.js, is served as JavaScript.
  std::set<std::string> seen;
  std::vector<std::string> todo = {"app.js"};
  const std::regex import_re(R"re(from "\./([a-z_]+\.js)")re");
  while (!todo.empty()) {
    const std::string file = todo.back();
    todo.pop_back();
    if (!seen.insert(file).second) continue;
    const Answer a = http_get(port, "/ui/" + file);
    INFO(file);
    CHECK(a.status == 200);
    CHECK(a.header("content-type") == "text/javascript; charset=utf-8");
    CHECK(a.header("x-content-type-options") == "nosniff");
    for (std::sregex_iterator it(a.body.begin(), a.body.end(), import_re), end; it != end; ++it) {
      todo.push_back((*it)[1]);
    }
  }
  CHECK(seen.size() >= 7);  // app, api, dom, workers, runs, logs, run, instance
  CHECK(http_get(port, "/ui/app.css").header("content-type") == "text/css; charset=utf-8");

  const Answer missing = http_get(port, "/ui/nope.js");
  CHECK(missing.status == 404);
  CHECK(json_of(missing)["error"] == "no dashboard file \"nope.js\"");
  CHECK(http_get(port, "/ui/%2e%2e%2fcorral.pid").status == 404);
  CHECK(http_get(port, "/ui").status == 404);
  CHECK(d.api("POST", "/").status == 405);
}

TEST_CASE("dashboard: GET /logs gives the last log lines merged, bounded, by file") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  ApiResponse all = d.api("GET", "/logs");
  REQUIRE(all.status == 200);
  CHECK(all.json["dir"] == home.file("logs"));
  CHECK(all.json["files"] == Json({"master", "worker-0", "worker-1"}));
  const std::string text = all.json["lines"].dump();
  CHECK_THAT(text, Catch::Contains("slot 1: worker pid"));
  CHECK_THAT(text, Catch::Contains("worker 0 ready"));

  CHECK(d.api("GET", "/logs?lines=3").json["lines"].size() == 3);
  for (const Json& line : d.api("GET", "/logs?source=worker-1").json["lines"]) {
    CHECK_THAT(line.get<std::string>(), Catch::Contains(" worker-1["));
  }
  ApiResponse bad = d.api("GET", "/logs?lines=0");
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("lines: expected a whole number from 1 to 1000"));
  CHECK(d.api("GET", "/logs?source=daemon.out").status == 400);

  // A line of 3 MiB in a log file (a log can hold anything), then a short one: the answer reads
  // only the file's end, leaves the cut line out and still has the line after it. (worker-1.log:
  // a failed test prints the end of master.log, which must stay readable.)
  std::ofstream(home.file("logs/worker-1.log"), std::ios::app)
      << std::string(3 << 20, 'x') << "\n2099-01-01T00:00:00.000+00:00 worker-1[1] info after it\n";
  ApiResponse after = d.api("GET", "/logs?lines=1000&source=worker-1");
  REQUIRE(after.status == 200);
  CHECK(after.json["lines"].back() == "2099-01-01T00:00:00.000+00:00 worker-1[1] info after it");
  CHECK(after.body.size() < (300u << 10));
  for (const Json& line : after.json["lines"]) CHECK(line.get<std::string>().size() < 1000);
}

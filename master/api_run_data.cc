// Runs over data rows: POST /runs with "data": {"path": "/srv/rows.csv", "format": "csv",
// "key": "email"} runs one instance per good row of a file on the daemon's host. The file is
// scanned once on libuv's thread pool (shared/data/rows.h), writing an index of its rows under
// <home>/data; workers then read each instance's row from the file when it starts. Rows that do
// not parse are answered back by line, and the others run.
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>

#include "master/run_service.h"
#include "shared/data/rows.h"
#include "shared/proc.h"
#include "shared/uv/work.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

struct DataRequest {
  std::string path;
  data::Format format = data::Format::kCsv;
  std::string key;
};

Result<DataRequest> data_request(const json& body) {
  const json& d = body["data"];
  if (!d.is_object()) return invalid_argument("data: expected {\"path\": \"/abs/rows.csv\"}");
  for (const auto& [k, v] : d.items()) {
    if (k != "path" && k != "format" && k != "key") {
      return invalid_argument("data." + k + ": unknown field (known: path, format, key)");
    }
  }
  DataRequest r;
  r.path = d.value("path", "");
  if (r.path.empty() || r.path.front() != '/') {
    return invalid_argument("data.path: expected an absolute path on the daemon's host, got " +
                            d.value("path", json()).dump());
  }
  auto format = d.contains("format") ? data::format_named(d.value("format", ""))
                                     : data::format_of_path(r.path);
  if (!format) {
    return invalid_argument(d.contains("format") ? "data.format: expected \"csv\" or \"jsonl\""
                                                 : "data.format: missing, and " + r.path +
                                                       " does not end in .csv, .jsonl or .ndjson");
  }
  r.format = *format;
  if (d.contains("key") && (!d["key"].is_string() || d["key"].get<std::string>().empty())) {
    return invalid_argument("data.key: expected a column name");
  }
  r.key = d.value("key", "");
  if (body.contains("instances")) {
    return invalid_argument("instances: a run over data has one instance per row; leave it out");
  }
  return r;
}

json bad_rows(const data::Scan& scan) {
  json out = json::array();
  for (const auto& b : scan.bad) out.push_back({{"line", b.line}, {"error", b.error}});
  return out;
}

}  // namespace

void RunService::submit_data(const ApiCall& c, json body) {
  auto req = data_request(body);
  if (!req) {
    c.respond.send(Response::error(400, req.status().message()));
    return;
  }
  static std::atomic<uint64_t> next{0};
  std::error_code ec;
  std::filesystem::create_directories(cfg_.home + "/data", ec);
  std::string index =
      cfg_.home + "/data/" + std::to_string(unix_ms_now()) + "-" + std::to_string(next++) + ".idx";
  auto scan = std::make_shared<Result<data::Scan>>(Status(Code::kInternal, "not scanned"));
  Status queued = uv::queue_work(
      loop_, [scan, r = *req, index] { *scan = data::scan(r.path, r.format, index, r.key); },
      [this, scan, r = *req, index, body = std::move(body), respond = c.respond]() mutable {
        std::optional<std::string> error = data_run_problem(*scan);
        if (!error && workers_.stopping()) error = "the daemon is stopping";
        if (error) {
          std::remove(index.c_str());
          respond.send(Response::error(workers_.stopping() ? 503 : 400, *error));
          return;
        }
        submit_data_run(std::move(body), **scan, r.path, data::to_string(r.format), r.key, index,
                        respond);
      });
  if (!queued) c.respond.send(Response::error(500, queued.message()));
}

std::optional<std::string> RunService::data_run_problem(const Result<data::Scan>& scan) const {
  if (!scan) return "data: " + scan.status().message();
  if (scan->rows == 0) {
    std::string first = scan->bad.empty() ? ""
                                          : ": line " + std::to_string(scan->bad[0].line) + ": " +
                                                scan->bad[0].error;
    return "data: no row to run (" + std::to_string(scan->skipped) + " skipped" + first + ")";
  }
  if (scan->rows > kMaxRunInstances) {
    return "data: " + std::to_string(scan->rows) + " rows; a run holds at most " +
           std::to_string(kMaxRunInstances) + " instances";
  }
  return std::nullopt;
}

void RunService::submit_data_run(json body, const data::Scan& scan, const std::string& path,
                                 std::string_view format, const std::string& key,
                                 const std::string& index, const http::Responder& respond) {
  body.erase("data");
  body["instances"] = scan.rows;
  std::set<std::string> columns;
  for (const std::string& col : scan.columns) columns.insert("row." + col);
  auto req = request(body, columns);
  auto refused = req ? refuse(req->count) : std::nullopt;
  if (!req || refused) {
    std::remove(index.c_str());
    respond.send(req ? Response::error(refused->status, refused->why)
                     : Response::error(400, req.status().message()));
    return;
  }
  json data = {{"path", path},         {"format", format},
               {"index", index},       {"columns", scan.columns},
               {"rows", scan.rows},    {"skipped", scan.skipped},
               {"bad", bad_rows(scan)}};
  if (!key.empty()) data["key"] = key;
  spdlog::info("data {}: {} rows to run, {} skipped", path, scan.rows, scan.skipped);
  submit({std::move(req->scenario), std::move(req->vars), req->count, respond, req->priority,
          std::nullopt, std::move(data)});
}

void RunService::add_row(const Run& run, uint32_t i, api::InstanceEntry& entry) const {
  if (!run.data.is_object()) return;
  auto file = data::RowFile::open(run.data);
  auto row = file ? (*file)->row(i) : Result<json>(file.status());
  if (!row) {
    entry.row_error = row.status().message();
    return;
  }
  if (auto key = run.data.find("key");
      key != run.data.end() && row->contains(key->get<std::string>())) {
    entry.key = (*row)[key->get<std::string>()];
  }
  entry.row = std::move(*row);
}

void RunService::find_instance_by_key(const ApiCall& c, const Run& run) {
  const std::string key = http::percent_decode(c.args.at(1), false);
  auto found = std::make_shared<Result<std::optional<uint64_t>>>(std::optional<uint64_t>());
  Status queued = uv::queue_work(
      loop_,
      [found, d = run.data, key] {
        auto file = data::RowFile::open(d);
        *found = file ? (*file)->find(d.value("key", ""), key) : file.status();
      },
      [this, found, id = run.id, column = run.data.value("key", ""), key, respond = c.respond] {
        Run* now = runs_.find(id);  // (it may have been forgotten meanwhile)
        if (now == nullptr) {
          respond.send(Response::error(404, "no run \"" + id + "\""));
        } else if (!*found) {
          respond.send(Response::error(
              503, "the run's data file cannot be read: " + found->status().message()));
        } else if (!**found || ***found >= now->size) {
          respond.send(Response::error(
              404, "run " + id + " has no instance with " + column + " \"" + key + "\""));
        } else {
          answer_instance(respond, *now, static_cast<uint32_t>(***found));
        }
      });
  if (!queued) c.respond.send(Response::error(500, queued.message()));
}

}  // namespace corral::master

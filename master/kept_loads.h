// Load tests that ended, kept (docs/load.md "Kept tests"). A test is kept once it has ended and
// its target has stopped: its answer (GET /loads/<id>) goes to the journal in two parts, the
// summary, which the master holds in memory to list the test, and the detail (the per-second
// series, the target's samples and the merged histograms), which it reads back from the journal
// when the test itself is asked for. They survive a restart, and retention forgets them as it
// forgets finished runs: beyond the newest `keep_runs`, or older than `keep_runs_for`.
//
// Without a journal (unit tests), tests are kept in memory whole. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/journal/journal.h"
#include "shared/api/loads.h"
#include "shared/status.h"

namespace corral::master {

// A kept test's detail, as the journal stores it: {"series": [...], "target": [...], "totals":
// {LoadSecond}}, compressed (shared/text/packed.h). Pure.
std::string encode_detail(const nlohmann::json& detail);
Result<nlohmann::json> decode_detail(const std::string& text);

// Takes a test's series (its own and its target's) out of `full` into a detail, with `totals`
// (the test's merged seconds, ipc::LoadSecond's JSON); put_detail() puts them back. Pure.
nlohmann::json take_detail(api::LoadAnswer& full, nlohmann::json totals);
void put_detail(api::LoadAnswer& summary, const nlohmann::json& detail);

class KeptLoads {
 public:
  struct Entry {
    int64_t created_ms = 0;
    int64_t ended_ms = 0;
    std::string summary;  // GET /loads/<id> without its series, as JSON text: lists splice it
  };
  using Read = std::function<void(Result<api::LoadAnswer>)>;

  // Reads the tests `host` ran ("" on SQLite) from `journal`, which keeps every test from now
  // on. Before the journal's first write (start-up). A summary the journal holds that is not a
  // JSON object is skipped, and said so in the log.
  Status restore(journal::Journal* journal, std::string host);

  // Keeps a test that ended: `full` is its answer with its series, `totals` its merged seconds.
  void keep(api::LoadAnswer full, nlohmann::json totals, int64_t created_ms, int64_t ended_ms);
  const Entry* find(const std::string& id) const;
  // Every kept test, by id.
  const std::map<std::string, Entry>& all() const { return tests_; }
  size_t size() const { return tests_.size(); }
  // Test `id` whole, read from the journal: `done` on the loop thread, later (or at once
  // without a journal); kNotFound when it is not kept.
  void read(const std::string& id, Read done) const;

  // Retention: forgets the tests beyond the newest `keep` and those that ended before
  // `before_ms`, here and in the journal. Returns how many.
  size_t prune(size_t keep, int64_t before_ms);

 private:
  journal::Journal* journal_ = nullptr;
  std::string host_;
  std::map<std::string, Entry> tests_;
  std::map<std::string, nlohmann::json> details_;  // without a journal only
};

}  // namespace corral::master

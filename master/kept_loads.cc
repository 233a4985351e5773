#include "master/kept_loads.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "shared/text/packed.h"

namespace corral::master {

using nlohmann::json;

// A kept test's detail unpacks to at most this: a day-long test's series is some 30 MB.
constexpr size_t kMaxDetailBytes = size_t{256} << 20;

std::string encode_detail(const json& detail) { return pack(detail.dump()); }

Result<json> decode_detail(const std::string& text) {
  auto raw = unpack(text, kMaxDetailBytes);
  if (!raw) return Status(raw.status().code(), "the test's series: " + raw.status().message());
  json detail = json::parse(*raw, nullptr, false);
  if (!detail.is_object()) return invalid_argument("the test's series: not a JSON object");
  return detail;
}

json take_detail(api::LoadAnswer& full, json totals) {
  json detail = {{"series", std::move(full.series)}, {"totals", std::move(totals)}};
  full.series = nullptr;
  if (full.target) {
    detail["target"] = std::move(full.target->series);
    full.target->series = nullptr;
  }
  return detail;
}

void put_detail(api::LoadAnswer& summary, const json& detail) {
  summary.series = detail.value("series", json::array());
  if (summary.target) summary.target->series = detail.value("target", json::array());
}

Status KeptLoads::restore(journal::Journal* journal, std::string host) {
  journal_ = journal;
  host_ = std::move(host);
  auto rows = journal_->load_now([this](journal::Store& s) { return s.load_tests(host_); });
  if (!rows) return rows.status();
  for (journal::LoadTestRow& row : *rows) {
    if (row.summary.empty() || row.summary.front() != '{' || !json::accept(row.summary)) {
      spdlog::warn("journal: kept load test {} is skipped: its summary is not a JSON object",
                   row.id);
      continue;
    }
    tests_[row.id] = {row.created_ms, row.ended_ms, std::move(row.summary)};
  }
  return Status::ok();
}

void KeptLoads::keep(api::LoadAnswer full, json totals, int64_t created_ms, int64_t ended_ms) {
  const std::string id = full.id;
  json detail = take_detail(full, std::move(totals));
  std::string summary = api::to_json(full).dump();
  if (journal_ == nullptr) {
    details_[id] = std::move(detail);
  } else {
    auto row = std::make_shared<journal::LoadTestRow>();
    *row = {id, host_, created_ms, ended_ms, summary, ""};
    // Encoding a long test's series takes milliseconds: the journal's thread does it, once.
    auto pending = std::make_shared<json>(std::move(detail));
    journal_->write([row, pending](journal::Store& s) {
      if (pending->is_object()) {
        row->detail = encode_detail(*pending);
        *pending = nullptr;
      }
      return s.put_load_test(*row);
    });
  }
  tests_[id] = {created_ms, ended_ms, std::move(summary)};
}

const KeptLoads::Entry* KeptLoads::find(const std::string& id) const {
  auto it = tests_.find(id);
  return it == tests_.end() ? nullptr : &it->second;
}

void KeptLoads::read(const std::string& id, Read done) const {
  const Entry* e = find(id);
  if (e == nullptr) {
    done(Status(Code::kNotFound, "no load test \"" + id + "\""));
    return;
  }
  if (journal_ == nullptr) {
    auto whole = api::load_from_json(json::parse(e->summary));
    if (whole) put_detail(*whole, details_.at(id));
    done(std::move(whole));
    return;
  }
  // Read, decoded and put together on the journal's thread; answered on the loop.
  auto whole = std::make_shared<Result<api::LoadAnswer>>(api::LoadAnswer());
  journal_->read(
      [id, summary = e->summary, whole](journal::Store& s) {
        auto text = s.load_test_detail(id);
        auto detail = text ? decode_detail(*text) : Result<json>(text.status());
        if (!detail) {
          *whole = detail.status();
          return;
        }
        *whole = api::load_from_json(json::parse(summary, nullptr, false));
        if (*whole) put_detail(**whole, *detail);
      },
      [whole, done = std::move(done)] { done(std::move(*whole)); });
}

size_t KeptLoads::prune(size_t keep, int64_t before_ms) {
  std::vector<std::pair<int64_t, std::string>> newest;  // (created, id), newest first
  for (const auto& [id, e] : tests_) newest.emplace_back(e.created_ms, id);
  std::sort(newest.begin(), newest.end(), std::greater<>());
  size_t n = 0;
  for (size_t i = 0; i < newest.size(); ++i) {
    const std::string& id = newest[i].second;
    if (i < keep && tests_.at(id).ended_ms >= before_ms) continue;
    tests_.erase(id);
    details_.erase(id);
    if (journal_) journal_->write([id](journal::Store& s) { return s.delete_load_test(id); });
    ++n;
  }
  return n;
}

}  // namespace corral::master

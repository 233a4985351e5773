// A run's instances through the API:
//   GET /runs/<id>/instances?state=failed&limit=100&from=0&steps=true
//       {"run", "instances": [...], "next": index to ask from for more, or null}
//   GET /runs/<id>/instances/<n>   one instance with its step history
// A run in memory answers from there. A finished run held as a summary is read back from the
// journal a page of kPage instances at a time, on the journal's thread, until the answer is
// full: a run of a million instances is never loaded whole for it. So is an unfinished run
// shared by the hosts of a cluster (docs/cluster.md), whose instances run on every host and
// are all in the journal; one instance that this host runs answers from its memory.
#include <charconv>
#include <iterator>

#include "master/run_service.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

constexpr uint32_t kPage = 2000;        // instances read back from the journal per read
constexpr uint32_t kMaxListed = 10000;  // per answer: more are asked for with `from`

std::optional<uint32_t> index_param(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// GET /runs/<id>/instances: `list`, and where to go on from when the run has more.
json instances_answer(const std::string& id, std::vector<api::InstanceEntry> list, uint32_t next,
                      uint32_t size) {
  api::InstancesAnswer a;
  a.run = id;
  a.instances = std::move(list);
  if (next < size) a.next = next;
  return api::to_json(a);
}

// Whether this host holds what is current of instance i: every instance of a run of its own,
// only those of the ranges it claimed of a run the hosts of a cluster share.
bool current_here(const Run& run, uint32_t i) {
  if (!run.whole) return false;
  if (!run.clustered || run.finished_ms != 0) return true;
  auto it = run.claims.upper_bound(i);
  return it != run.claims.begin() && i < std::prev(it)->second;
}

}  // namespace

Result<RunService::InstanceQuery> RunService::instance_query(const http::Request& req) {
  InstanceQuery q;
  if (auto s = req.query_param("state")) {
    q.state = instance_state_from(*s);
    if (!q.state) {
      return invalid_argument(
          "state: expected one of queued, running, passed, failed, errored, "
          "cancelled, got \"" +
          *s + "\"");
    }
  }
  auto number = [&req](const char* name, uint32_t fallback) -> Result<uint32_t> {
    auto text = req.query_param(name);
    if (!text) return fallback;
    auto v = index_param(*text);
    if (!v)
      return invalid_argument(std::string(name) + ": expected a whole number, got \"" + *text +
                              "\"");
    return *v;
  };
  auto limit = number("limit", 100);
  if (!limit) return limit.status();
  auto from = number("from", 0);
  if (!from) return from.status();
  q.limit = std::min(*limit, kMaxListed);
  q.from = *from;
  q.with_steps = req.query_param("steps").value_or("") == "true";
  return q;
}

uint32_t RunService::collect_instances(const Run& window, uint32_t offset, const InstanceQuery& q,
                                       std::vector<api::InstanceEntry>& list) const {
  uint32_t i = q.from > offset ? q.from - offset : 0;
  for (; i < window.size && list.size() < q.limit; ++i) {
    if (q.state && window.instance(i).state != *q.state) continue;
    list.push_back(runs_.instance_of(window, i, q.with_steps));
    list.back().i = offset + i;
  }
  return offset + i;
}

void RunService::api_instances(const ApiCall& c) {
  Run* run = run_of(c);
  if (run == nullptr) return;
  auto q = instance_query(c.req);
  if (!q) {
    c.respond.send(Response::error(400, q.status().message()));
    return;
  }
  if (run->whole && (!run->clustered || run->finished_ms != 0)) {
    std::vector<api::InstanceEntry> list;
    uint32_t next = collect_instances(*run, 0, *q, list);
    c.respond.send(
        Response::json(200, instances_answer(run->id, std::move(list), next, run->size)));
    return;
  }
  read_instances(run->id, run->size, *q, {}, c.respond);
}

void RunService::read_instances(const std::string& id, uint32_t size, InstanceQuery q,
                                std::vector<api::InstanceEntry> list,
                                const http::Responder& respond) {
  if (q.from >= size || list.size() >= q.limit) {
    respond.send(Response::json(200, instances_answer(id, std::move(list), q.from, size)));
    return;
  }
  const uint32_t from = q.from;
  const uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(size, uint64_t{from} + kPage));
  runs_.read_page(
      id, from, to,
      [this, id, size, from, q, list = std::move(list), respond](Runs::Page page) mutable {
        if (!page) {
          respond.send(Response::error(
              503,
              "the run's instances cannot be read from the journal: " + page.status().message()));
          return;
        }
        q.from = collect_instances(**page, from, q, list);
        read_instances(id, size, q, std::move(list), respond);
      });
}

void RunService::api_instance(const ApiCall& c) {
  Run* run = run_of(c);
  if (run == nullptr) return;
  auto i = index_param(c.args.at(1));
  if (!i && run->data.is_object() && run->data.contains("key")) {
    find_instance_by_key(c, *run);  // api_run_data.cc
    return;
  }
  if (!i || *i >= run->size) {
    c.respond.send(Response::error(404, "run " + run->id + " has no instance " + c.args[1]));
    return;
  }
  answer_instance(c.respond, *run, *i);
}

void RunService::answer_instance(const http::Responder& respond, Run& run, uint32_t i) {
  if (current_here(run, i)) {
    api::InstanceEntry entry = runs_.instance_of(run, i, true);
    add_row(run, i, entry);
    respond.send(Response::json(200, api::to_json(entry)));
    return;
  }
  runs_.read_page(run.id, i, i + 1, [this, id = run.id, i, respond](Runs::Page page) {
    if (!page) {
      respond.send(Response::error(
          503, "the run's instance cannot be read from the journal: " + page.status().message()));
      return;
    }
    api::InstanceEntry entry = runs_.instance_of(**page, 0, true);
    entry.i = i;
    if (Run* now = runs_.find(id)) add_row(*now, i, entry);
    respond.send(Response::json(200, api::to_json(entry)));
  });
}

}  // namespace corral::master

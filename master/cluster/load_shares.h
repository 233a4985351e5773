// Load tests spread over the hosts of a cluster (docs/cluster.md, "Load tests over hosts"),
// through three tables of the journal's database (migration 10). The host a test is submitted
// to, its origin, writes the test and one share per host taking part. Every second each host
// reads the shares it is to run: it starts a new one on its workers at the test's start time,
// and stops one the origin marked stopping, or that is gone (the origin ended the test, or it
// was claimed by nobody). Each host, the origin too, sends each second its share measured
// (ipc::LoadSecond, as JSON), numbered, and keeps it until the database has it; the origin reads
// the others' seconds and adds them up with its own workers'. Seconds stay in the database until
// the test ends: when its origin is declared dead (or restarted), a host running a share claims
// the test, reads every second so far and goes on as its origin. No second is lost on a broken
// connection, nor with the origin.
// Its queries go on the cluster's connection (Hosts::db), those of a beat in the hosts' round
// trip; every query runs on the loop without blocking it (pg_async.h). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/cluster/pg_async.h"
#include "shared/uv/timer.h"

namespace corral::master::cluster {

// A share of a test that this host is to run, as read at a beat.
struct ShareRow {
  std::string load;     // the test's id
  std::string origin;   // the host that submitted it, which adds up its seconds
  nlohmann::json body;  // {"scenario", "vars", "load"} as submitted
  int64_t start_ms = 0; // when the workers start, Unix milliseconds
  uint32_t index = 0;   // this host's share of `hosts`
  uint32_t hosts = 1;
  bool stopping = false;  // the origin asked it to end
  std::string state;      // '' until this host starts it, then running
  bool orphaned = false;  // its origin was declared dead, or restarted: a host claims it
};

// A test this host took over from its origin (LoadShares::Events::claimed).
struct ClaimedLoad {
  std::string load;
  std::string from;     // the origin it had
  nlohmann::json body;  // as in ShareRow
  struct Share {
    std::string host;
    uint32_t index = 0;
    std::string state;
    std::vector<nlohmann::json> seconds;  // all it sent so far, in order
  };
  std::vector<Share> shares;  // every host's, this one's included, by index
};

class LoadShares {
 public:
  // The origin reads the other hosts' seconds this often: its series trails by that much.
  static constexpr uint64_t kReadEveryMs = 250;

  struct Events {
    // Every share this host has to start or is running, at each beat.
    std::function<void(std::vector<ShareRow>)> shares;
    // The tests this host is the origin of, still running.
    std::function<std::vector<std::string>()> originated;
    // A second measured by `host` for test `load`, in the order sent.
    std::function<void(const std::string& load, const std::string& host, nlohmann::json second)>
        second;
    // The state of `host`'s share of `load`: '' (not started), running, done, or why it could
    // not run.
    std::function<void(const std::string& load, const std::string& host, const std::string& state)>
        share_state;
    // This host took test `claimed.load` over: it is its origin from now on.
    std::function<void(ClaimedLoad claimed)> claimed;
    // A test this host is the origin of was taken over by host `origin` while this host was cut
    // off, or is gone ("").
    std::function<void(const std::string& load, const std::string& origin)> lost;
  };

  // `db` outlives it.
  LoadShares(uv_loop_t* loop, PgAsync& db, std::string host, Events events);

  // Gives up this host's tests of an earlier life (another host may claim them), and starts
  // reading seconds.
  void start();
  // Reads this host's shares and sends the seconds that wait: once a second, at the hosts'
  // beat (Hosts::each_beat).
  void beat();
  // A host was declared dead: the shares are read now, not at the next beat, so that a test
  // whose origin it was is claimed at once.
  void host_died();

  // Origin: writes test `id` and a share for each of `hosts` (this host first, which runs share
  // 0 itself). `done` gets kAlreadyExists when the id is taken, kUnavailable before start()
  // or while the database was never reached.
  void publish(const std::string& id, const nlohmann::json& body, int64_t start_ms,
               const std::vector<std::string>& hosts, std::function<void(Status)> done);
  // Origin: asks the other hosts to end their shares.
  void stop(const std::string& id);
  // Origin: the test ended; its rows go.
  void forget(const std::string& id);
  // A host running a share: its state for the origin.
  void set_state(const std::string& id, const std::string& state);
  // A host running a share: a second for the origin, sent now (or, while one is on its way
  // or after a failure, at the next beat; kept until sent).
  void post(const std::string& id, nlohmann::json second);

 private:
  // Asks `sql` on the connection, counted in out_ until answered; the answer is dropped once
  // this is gone.
  void ask(const char* sql, std::vector<std::string> params, PgAsync::Done done);
  void clean();
  void read_shares();
  void claim();
  void on_claim(const PgRows& rows);
  void read_seconds();
  nlohmann::json had(const std::vector<std::string>& mine);
  void flush();
  struct Outbox;
  void send(const std::string& id, Outbox& box);

  PgAsync& db_;
  std::string host_;
  Events events_;
  std::shared_ptr<int> life_ = std::make_shared<int>(0);  // ask()'s answers check it
  size_t out_ = 0;                                        // queries not answered yet
  uv::Timer reader_;     // read_seconds(), every kReadEveryMs
  bool reading_ = false;  // a read_seconds() query is out
  bool claiming_ = false;  // a claim() query is out
  bool cleaned_ = false;   // this host's tests from an earlier life are given up
  bool cleaning_ = false;  // ... the query doing it is out
  struct Outbox {
    uint64_t next_seq = 0;
    std::vector<nlohmann::json> seconds;
    bool sending = false;
    bool done = false;  // the last second is in: the box goes once it is sent
  };
  std::map<std::string, Outbox> outboxes_;  // by test
  // Origin: the next second wanted, by test and host; those before it were added up.
  std::map<std::pair<std::string, std::string>, uint64_t> next_;
};

}  // namespace corral::master::cluster

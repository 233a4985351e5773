// The journal's writer with writes that are wrong in themselves: set aside once, never holding
// up the others; and with a full disk, which is waited out instead.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "tests/unit/master/journal_bench.h"

using corral::Status;
using namespace corral::master::journal;  // NOLINT: the rows, Store, Journal and WriteTag
using namespace corral::test;             // NOLINT: the journal's test bench

namespace {

// The store of a fresh journal file on which no two instances may share a non-empty reason.
std::unique_ptr<Store> unique_reasons(const std::string& path) {
  auto store = open_store(path);
  sql(path, "CREATE UNIQUE INDEX one_reason ON instances (reason) WHERE reason <> ''");
  return store;
}

InstanceRow failed(const std::string& run, uint32_t idx, const std::string& reason) {
  InstanceRow row = instance(run, idx, "failed");
  row.reason = reason;
  return row;
}

// Records the writes a Bench's journal sets aside, as "run/instance: error" lines, and the
// thread the callback ran on.
struct Rejects {
  explicit Rejects(Bench& b) {
    b.journal->set_on_rejected([this](const WriteTag& tag, const std::string& error) {
      seen += tag.run + "/" + std::to_string(tag.instance) + ": " + error + "\n";
      ran_on = std::this_thread::get_id();
    });
  }
  std::string seen;
  std::thread::id ran_on;
};

// Holds the writer thread until release(), so that everything queued meanwhile becomes one
// batch.
struct Gate {
  explicit Gate(Journal& j) {
    j.read([f = open.get_future().share()](Store&) { f.wait(); }, nullptr);
  }
  void release() { open.set_value(); }
  std::promise<void> open;
};

// Queues a read and runs the loop until its `done` came: every rejection of a write queued
// before it has been delivered by then.
bool settle(Bench& b) {
  bool done = false;
  b.journal->read([](Store&) {}, [&done] { done = true; });
  return b.run_until([&] { return done; });
}

}  // namespace

TEST_CASE("journal: a write breaking a constraint is set aside, the rest of its batch commits") {
  Bench b({}, unique_reasons);
  Rejects rejects(b);
  Gate gate(*b.journal);
  b.write_run("r1-aaaa", 0, 2);
  b.write(failed("r1-aaaa", 0, "timeout"), {"r1-aaaa", 0});
  b.write(failed("r1-aaaa", 1, "timeout"), {"r1-aaaa", 1});  // the same reason: refused
  b.write(failed("r1-aaaa", 2, "refused"), {"r1-aaaa", 2});
  gate.release();
  REQUIRE(settle(b));
  CHECK(rejects.seen == "r1-aaaa/1: put_instance: UNIQUE constraint failed: instances.reason\n");
  CHECK(rejects.ran_on == std::this_thread::get_id());  // on the loop thread
  CHECK(b.rows() == "1/2/2");
  CHECK(sql(b.path, "SELECT group_concat(idx || ':' || reason, ' ') FROM instances") ==
        "0:timeout 2:refused");
  auto h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.rejected_writes, h.batches, h.failed_batches, h.queued) ==
        join(true, 5, 1, 1, 0, 0));  // the good writes in one transaction, nothing kept back

  b.write(failed("r1-aaaa", 3, "reset"), {"r1-aaaa", 3});  // later writes go straight in
  b.write(step("r1-aaaa", 3, 0, "failed"));
  REQUIRE(settle(b));
  CHECK(b.rows() == "1/3/3");
  h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.rejected_writes, h.failed_batches) == join(true, 7, 1, 0));
  CHECK(rejects.seen == "r1-aaaa/1: put_instance: UNIQUE constraint failed: instances.reason\n");
}

TEST_CASE("journal: a wrong row among rows queued together is set aside alone, with its tag") {
  Bench b({}, unique_reasons);
  Rejects rejects(b);
  Gate gate(*b.journal);
  b.write_run("r1-aaaa", 0, 0);
  b.journal->put_instance(failed("r1-aaaa", 0, "timeout"));
  b.journal->put_instance(failed("r1-aaaa", 1, "timeout"));  // the same reason: refused
  b.journal->put_instance(failed("r1-aaaa", 2, "refused"));
  gate.release();
  REQUIRE(settle(b));
  CHECK(rejects.seen == "r1-aaaa/1: put_instance: UNIQUE constraint failed: instances.reason\n");
  CHECK(sql(b.path, "SELECT group_concat(idx || ':' || reason, ' ') FROM instances") ==
        "0:timeout 2:refused");
  auto h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.rejected_writes, h.queued) == join(true, 3, 1, 0));
}

TEST_CASE("journal: instance rows on a full disk are kept and counted until they commit") {
  Bench b({.retry_ms = 20}, Bench::Flaky{});
  b.journal->write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); }, {"r1-aaaa"});
  for (uint32_t i = 0; i < 3; ++i) b.journal->put_instance(instance("r1-aaaa", i, "running"));
  b.journal->flush();
  CHECK(join(b.journal->health().ok, b.journal->health().queued) == join(false, 4));
  b.faults->failing = false;
  REQUIRE(wait_for([&] { return b.journal->health().queued == 0; },
                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }));
  CHECK(join(b.journal->health().committed, b.journal->health().rejected_writes) == join(4, 0));
  CHECK(b.rows() == "1/3/0");
}

TEST_CASE("journal: a write op that finds its own input wrong is set aside, its changes undone") {
  Bench b;
  Rejects rejects(b);
  Gate gate(*b.journal);
  b.write_run("r1-aaaa", 2, 0);
  b.journal->write(
      [](Store& s) {
        if (Status st = s.put_step(step("r1-aaaa", 1, 0, "passed")); !st) return st;
        return corral::invalid_argument("step 9 of r1-aaaa does not exist");
      },
      {"r1-aaaa", 1});
  b.write(step("r1-aaaa", 0, 0, "passed"));
  gate.release();
  REQUIRE(settle(b));
  CHECK(rejects.seen == "r1-aaaa/1: step 9 of r1-aaaa does not exist\n");
  CHECK(b.rows() == "1/2/1");  // its step undone with it
  CHECK(sql(b.path, "SELECT idx FROM steps") == "0");
  auto h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.rejected_writes, h.last_rejection, h.failed_batches) ==
        join(true, 4, 1, "step 9 of r1-aaaa does not exist", 0));
}

TEST_CASE("journal: a full disk is waited out, never taken for a wrong write") {
  // The file is capped at its size with 600 kB of filler in it: the 300 instances below fit
  // only once the filler is deleted, which leaves its pages free for reuse inside the cap.
  std::string pages;
  Bench b({.retry_ms = 20}, [&pages](const std::string& path) {
    open_store(path).reset();
    pages = sql(path,
                "CREATE TABLE filler (b BLOB); INSERT INTO filler VALUES (zeroblob(600000));"
                "PRAGMA page_count");
    return open_store(path, std::stoll(pages) + 2);
  });
  Rejects rejects(b);
  // Every write in one batch: the run's row alone would fit, and must not go in first.
  Gate gate(*b.journal);
  b.journal->write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); }, {"r1-aaaa"});
  for (uint32_t i = 0; i < 300; ++i) {
    b.write(failed("r1-aaaa", i, std::string(1000, 'x') + std::to_string(i)), {"r1-aaaa", i});
  }
  gate.release();
  b.journal->flush();
  auto h = b.journal->health();
  CHECK_THAT(h.error, Catch::Contains("database or disk is full"));
  CHECK(join(h.ok, h.queued, h.committed, h.rejected_writes) == join(false, 301, 0, 0));

  sql(b.path, "DELETE FROM filler");
  REQUIRE(wait_for([&] { return b.journal->health().queued == 0; },
                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }));
  REQUIRE(settle(b));
  h = b.journal->health();
  CHECK(join(h.ok, h.error, h.committed, h.rejected_writes) == join(true, "", 301, 0));
  CHECK(h.failed_batches >= 1);
  CHECK(rejects.seen == "");
  CHECK(b.rows() == "1/300/0");
  CHECK(std::stoll(sql(b.path, "PRAGMA page_count")) <= std::stoll(pages) + 2);
}

TEST_CASE("journal: health counts the writes set aside and names the latest") {
  Bench b({}, unique_reasons);
  Rejects rejects(b);
  b.write(failed("r1-aaaa", 0, "timeout"));
  b.write(failed("r1-aaaa", 1, "timeout"));  // untagged: the callback gets an empty tag
  REQUIRE(settle(b));
  Gate gate(*b.journal);
  b.write(failed("r1-aaaa", 2, "timeout"), {"r1-aaaa", 2});
  b.write(failed("r1-aaaa", 3, "refused"));
  b.write(failed("r1-aaaa", 4, "refused"), {"r1-aaaa", 4});
  gate.release();
  REQUIRE(settle(b));
  const std::string kUnique = "put_instance: UNIQUE constraint failed: instances.reason";
  CHECK(rejects.seen ==
        "/-1: " + kUnique + "\nr1-aaaa/2: " + kUnique + "\nr1-aaaa/4: " + kUnique + "\n");
  auto h = b.journal->health();
  CHECK(join(h.ok, h.error, h.rejected_writes, h.last_rejection, h.committed, h.queued) ==
        join(true, "", 3, kUnique, 2, 0));
}

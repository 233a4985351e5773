// The journal's store for kept load tests (master/kept_loads.h): rows by host, oldest first,
// listed without their detail, read one at a time with it, and forgotten.
#include <catch2/catch.hpp>

#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::master::journal::LoadTestRow;
using namespace corral::test;  // NOLINT: the journal's test bench

namespace {

std::string ids(Store& store, const std::string& host) {
  auto rows = store.load_tests(host);
  REQUIRE_OK(rows.status());
  std::string out;
  for (const LoadTestRow& r : *rows) {
    CHECK(r.detail.empty());  // a listing reads no detail
    out += r.id + "@" + std::to_string(r.created_ms) + " ";
  }
  return out;
}

}  // namespace

TEST_CASE_METHOD(AnyDb, "journal store: kept load tests by host, oldest first, detail by id") {
  EACH_STORE();
  const LoadTestRow a{"l2-aaaa", "", 2000, 3000, R"({"id":"l2-aaaa","name":"ü"})", "eJzL"};
  const LoadTestRow b{"l1-bbbb", "", 1000, 9000, R"({"id":"l1-bbbb"})", std::string(100000, 'x')};
  const LoadTestRow other{"l3-cccc", "h2/1", 500, 600, "{}", "zz"};
  for (const LoadTestRow& r : {a, b, other}) REQUIRE_OK(store->put_load_test(r));
  CHECK(ids(*store, "") == "l1-bbbb@1000 l2-aaaa@2000 ");
  CHECK(ids(*store, "h2/1") == "l3-cccc@500 ");
  auto rows = store->load_tests("");
  REQUIRE_OK(rows.status());
  LoadTestRow listed = a;
  listed.detail = "";
  CHECK(describe(tables::kLoadTests, (*rows)[1]) == describe(tables::kLoadTests, listed));
  CHECK(store->load_test_detail("l1-bbbb").value() == b.detail);
  auto none = store->load_test_detail("l9-zzzz");
  CHECK(none.status().code() == Code::kNotFound);
  CHECK(none.status().message() == "no load test \"l9-zzzz\" in the journal");
  REQUIRE_OK(store->put_load_test(a));  // again: the same row
  REQUIRE_OK(store->delete_load_test("l1-bbbb"));
  REQUIRE_OK(store->delete_load_test("l1-bbbb"));  // gone already: nothing to do
  CHECK(ids(*store, "") == "l2-aaaa@2000 ");
  store.reset();
  auto again = open_again();  // kept over a restart
  REQUIRE_OK(again.status());
  CHECK(ids(**again, "") == "l2-aaaa@2000 ");
}

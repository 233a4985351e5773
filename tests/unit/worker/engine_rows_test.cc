// Data rows on the engine: an instance reads its row when it starts (and again when it
// resumes elsewhere: rows never travel), its branches read it too, and a row that no longer
// reads ends the instance errored, naming the row and its line.
#include "shared/data/rows.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/worker/engine_fixture.h"

namespace corral::test::engine {
namespace {

json delay_step(const std::string& ms) {
  return {{"request", {{"url", "{{base}}/delay?ms=" + ms}}},
          {"capture", {{"slept", {{"json", "/slept_ms"}}}}}};
}

// Scans `csv` into dir and defines run r1 over it with `scenario`.
void define_over(Fixture& f, const TempDir& dir, const std::string& csv, const json& scenario) {
  std::string path = dir.write("rows.csv", csv);
  auto scan = data::scan(path, data::Format::kCsv, path + ".idx", "");
  REQUIRE(scan.is_ok());
  corral::worker::RunShape shape;
  shape.data = {{"path", path}, {"format", "csv"}, {"index", path + ".idx"}, {"columns", scan->columns}};
  Status s = f.engine->define_run("r1", scenario, {{"base", f.base}}, shape);
  INFO(s.message());
  REQUIRE(s.is_ok());
}

TEST_CASE("engine rows: each instance reads its row, its branches too, and again after a move") {
  Fixture f;
  TempDir dir;
  define_over(f, dir, "ms,later\n3,4\n5,6\n",
              {{"name", "rows"},
               {"steps",
                {delay_step("{{row.ms}}"), {{"sleep", "300ms"}},
                 {{"parallel", {{{"name", "b"}, {"steps", {delay_step("{{row.later}}")}}}}}}}}});
  REQUIRE(f.engine->start("r1", 0, {}).is_ok());
  REQUIRE(f.engine->start("r1", 1, {}).is_ok());
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 1 && f.of("step", 1).size() == 1; }));
  CHECK(f.of("step", 0)[0]["vars"]["slept"] == 3);
  CHECK(f.of("step", 1)[0]["vars"]["slept"] == 5);
  CHECK_FALSE(f.of("step", 0)[0]["vars"].contains("row.ms"));
  json taken = f.engine->take_all();  // both sleep: move them, without their rows
  CHECK_FALSE(taken["r1"]["1"]["vars"].contains("row.later"));
  for (uint32_t i : {0u, 1u}) {
    auto cp = ipc::checkpoint_from_json(taken["r1"][std::to_string(i)]);
    REQUIRE(cp.is_ok());
    REQUIRE(f.engine->start("r1", i, *cp).is_ok());
  }
  REQUIRE(f.run_until([&] { return f.done_count() == 2; }));
  for (uint32_t i : {0u, 1u}) {
    CHECK(f.of("done", i)[0]["state"] == "passed");
    json joined;
    for (const json& e : f.of("step", i)) {
      if (e["step"] == 2) joined = e;
    }
    CHECK(joined["vars"]["b.slept"] == (i == 0 ? 4 : 6));
  }
}

TEST_CASE("engine rows: a row that no longer reads ends its instance errored, naming it") {
  Fixture f;
  TempDir dir;
  define_over(f, dir, "ms\n1\n2\n", {{"name", "rows"}, {"steps", {delay_step("{{row.ms}}")}}});
  dir.write("rows.csv", "ms\n");  // the file shrank after the scan
  REQUIRE(f.engine->start("r1", 1, {}).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done", 1)[0]["state"] == "errored");
  CHECK_THAT(f.of("done", 1)[0]["reason"].get<std::string>(),
             Catch::StartsWith("data row 1 (" + dir.path() + "/rows.csv line 3)"));
  CHECK(f.engine->active() == 0);
}

}  // namespace
}  // namespace corral::test::engine

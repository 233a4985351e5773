#include "master/journal/migrate.h"

#include <iterator>

#include "master/journal/sql.h"

namespace corral::master::journal {
namespace {

// One migration, from `version` to the next, and the new version with it.
Status migrate_one(Store& store, Dialect& dialect, int64_t version) {
  if (Status s = store.begin(); !s) return s;
  Status s = dialect.exec_script(dialect.translated(sql::kMigrations[version]));
  if (s) s = dialect.exec_script("DELETE FROM schema_version");
  if (s) {
    s = dialect.exec_script("INSERT INTO schema_version (version) VALUES (" +
                            std::to_string(version + 1) + ")");
  }
  if (s) s = store.commit();
  if (!s) store.rollback();
  return s;
}

Status migrate_locked(Store& store, Dialect& dialect) {
  Status made = dialect.exec_script(
      dialect.translated("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  if (!made) return made;
  auto version = dialect.schema_version();
  if (!version) return version.status();
  constexpr int64_t kLatest = std::size(sql::kMigrations);
  if (*version > kLatest) {
    return invalid_argument("the journal " + dialect.where() + " has schema version " +
                            std::to_string(*version) + ", newer than this corral knows (" +
                            std::to_string(kLatest) + ")");
  }
  for (int64_t v = *version; v < kLatest; ++v) {
    if (Status s = migrate_one(store, dialect, v); !s) return s;
  }
  return Status::ok();
}

}  // namespace

Status migrate(Store& store, Dialect& dialect) {
  if (Status s = dialect.lock(); !s) return s;
  Status s = migrate_locked(store, dialect);
  dialect.unlock();
  return s;
}

}  // namespace corral::master::journal

// The loop that brings a journal's schema to the newest version (sql::kMigrations), shared by
// both stores. A store gives it the pieces that differ between SQLite and PostgreSQL, as a
// Dialect; the loop does the rest the same way on both.
#pragma once

#include <cstdint>
#include <string>

#include "master/journal/store.h"
#include "shared/status.h"

namespace corral::master::journal {

class Dialect {
 public:
  virtual ~Dialect() = default;

  // How messages name the journal: its file, or its URL without the password.
  virtual std::string where() const = 0;
  // Runs statements without parameters (a migration may hold several); fails as the store's
  // writes do.
  virtual Status exec_script(const std::string& text) = 0;
  // The version schema_version holds: 0 when it holds none.
  virtual Result<int64_t> schema_version() = 0;
  // A migration's SQL as this database takes it.
  virtual std::string translated(const char* text) const { return text; }
  // Held while migrating (hosts that share a PostgreSQL journal and start together migrate
  // once); unlock() runs whenever lock() succeeded.
  virtual Status lock() { return Status::ok(); }
  virtual void unlock() {}
};

// Creates schema_version when the journal has none, then runs each migration the journal has
// not had in a transaction of `store`, which records the new version with it; a failed one is
// rolled back and its error returned. A journal of a version newer than this corral knows fails
// with kInvalidArgument naming it and the version.
Status migrate(Store& store, Dialect& dialect);

}  // namespace corral::master::journal

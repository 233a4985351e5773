// libpq, loaded when first used (shared/lazy_library.h): only a master whose journal or
// cluster is on PostgreSQL loads it. Every PQ* function corral calls is defined in pq_lazy.cc
// with libpq's own signature and forwards to libpq.so.5's. When libpq cannot be loaded they
// fail as libpq does without memory (a null connection or result, CONNECTION_BAD,
// PGRES_FATAL_ERROR, 0), and PQerrorMessage/PQresultErrorMessage give pq_load_failure().
#pragma once

#include <string>

namespace corral::master::journal {

// "" once libpq is loaded, else "libpq cannot be loaded: <why>". Loads it if it is not.
const std::string& pq_load_failure();

}  // namespace corral::master::journal

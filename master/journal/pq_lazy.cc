// Not in a unity batch: it defines libpq's functions, which other files only call.
#include "master/journal/pq_lazy.h"

#include <libpq-fe.h>

#include "shared/lazy_library.h"

// Each function corral calls: (return type, name, parameters, arguments, what it returns when
// libpq cannot be loaded).
#define CORRAL_PQ_FUNCTIONS(X)                                                                    \
  X(int, PQlibVersion, (void), (), 0)                                                             \
  X(PGconn*, PQconnectdbParams, (const char* const* k, const char* const* v, int expand),         \
    (k, v, expand), nullptr)                                                                      \
  X(PGconn*, PQconnectStartParams, (const char* const* k, const char* const* v, int expand),      \
    (k, v, expand), nullptr)                                                                      \
  X(PostgresPollingStatusType, PQconnectPoll, (PGconn * c), (c), PGRES_POLLING_FAILED)            \
  X(PQconninfoOption*, PQconninfoParse, (const char* info, char** err), (info, err), nullptr)     \
  X(ConnStatusType, PQstatus, (const PGconn* c), (c), CONNECTION_BAD)                             \
  X(char*, PQerrorMessage, (const PGconn* c), (c), failure_text())                                \
  X(int, PQbackendPID, (const PGconn* c), (c), 0)                                                 \
  X(int, PQsocket, (const PGconn* c), (c), -1)                                                    \
  X(int, PQsetnonblocking, (PGconn * c, int arg), (c, arg), -1)                                   \
  X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * c, PQnoticeProcessor proc, void* arg),     \
    (c, proc, arg), nullptr)                                                                      \
  X(int, PQconsumeInput, (PGconn * c), (c), 0)                                                    \
  X(int, PQisBusy, (PGconn * c), (c), 0)                                                          \
  X(int, PQflush, (PGconn * c), (c), -1)                                                          \
  X(PGnotify*, PQnotifies, (PGconn * c), (c), nullptr)                                            \
  X(int, PQenterPipelineMode, (PGconn * c), (c), 0)                                               \
  X(int, PQexitPipelineMode, (PGconn * c), (c), 0)                                                \
  X(int, PQpipelineSync, (PGconn * c), (c), 0)                                                    \
  X(PGresult*, PQexec, (PGconn * c, const char* q), (c, q), nullptr)                              \
  X(PGresult*, PQprepare, (PGconn * c, const char* s, const char* q, int n, const Oid* t),        \
    (c, s, q, n, t), nullptr)                                                                     \
  X(PGresult*, PQexecPrepared,                                                                    \
    (PGconn * c, const char* s, int n, const char* const* v, const int* l, const int* f, int rf), \
    (c, s, n, v, l, f, rf), nullptr)                                                              \
  X(int, PQsendPrepare, (PGconn * c, const char* s, const char* q, int n, const Oid* t),          \
    (c, s, q, n, t), 0)                                                                           \
  X(int, PQsendQueryParams,                                                                       \
    (PGconn * c, const char* q, int n, const Oid* t, const char* const* v, const int* l,          \
     const int* f, int rf),                                                                       \
    (c, q, n, t, v, l, f, rf), 0)                                                                 \
  X(int, PQsendQueryPrepared,                                                                     \
    (PGconn * c, const char* s, int n, const char* const* v, const int* l, const int* f, int rf), \
    (c, s, n, v, l, f, rf), 0)                                                                    \
  X(PGresult*, PQgetResult, (PGconn * c), (c), nullptr)                                           \
  X(ExecStatusType, PQresultStatus, (const PGresult* r), (r), PGRES_FATAL_ERROR)                  \
  X(char*, PQresultErrorMessage, (const PGresult* r), (r), failure_text())                        \
  X(char*, PQresultErrorField, (const PGresult* r, int field), (r, field), nullptr)               \
  X(int, PQntuples, (const PGresult* r), (r), 0)                                                  \
  X(int, PQnfields, (const PGresult* r), (r), 0)                                                  \
  X(char*, PQgetvalue, (const PGresult* r, int row, int col), (r, row, col), failure_text())      \
  X(int, PQgetisnull, (const PGresult* r, int row, int col), (r, row, col), 1)                    \
  X(int, PQfnumber, (const PGresult* r, const char* name), (r, name), -1)                         \
  X(int, PQgetlength, (const PGresult* r, int row, int col), (r, row, col), 0)
// Those that return nothing: (name, parameters, arguments).
#define CORRAL_PQ_PROCEDURES(X)   \
  X(PQfinish, (PGconn * c), (c))  \
  X(PQclear, (PGresult * r), (r)) \
  X(PQfreemem, (void* p), (p))    \
  X(PQconninfoFree, (PQconninfoOption * o), (o))

namespace corral::master::journal {
namespace {

struct Pq {
  LazyLibrary lib;
#define CORRAL_PQ_POINTER(ret, name, params, args, ...) ret(*name) params = nullptr;
  CORRAL_PQ_FUNCTIONS(CORRAL_PQ_POINTER)
#define CORRAL_PQ_PROCEDURE_POINTER(name, params, args) void(*name) params = nullptr;
  CORRAL_PQ_PROCEDURES(CORRAL_PQ_PROCEDURE_POINTER)
};

Pq load() {
  // CORRAL_TEST_LIBPQ names another file: the tests' way to see libpq missing.
  Pq p{open_library("libpq.so.5", "CORRAL_TEST_LIBPQ", "libpq")};
#define CORRAL_PQ_RESOLVE(name, ...) p.name = find_function<decltype(p.name)>(p.lib, #name);
#define CORRAL_PQ_RESOLVE_FUNCTION(ret, name, ...) CORRAL_PQ_RESOLVE(name)
  CORRAL_PQ_FUNCTIONS(CORRAL_PQ_RESOLVE_FUNCTION)
  CORRAL_PQ_PROCEDURES(CORRAL_PQ_RESOLVE)
  return p;
}

// Loaded on the first call, once, whichever thread calls first.
const Pq& pq() {
  static const Pq p = load();
  return p;
}

}  // namespace

const std::string& pq_load_failure() { return pq().lib.failure; }

}  // namespace corral::master::journal

namespace {

// libpq's messages are char*; nobody writes through them.
char* failure_text() {
  return const_cast<char*>(corral::master::journal::pq_load_failure().c_str());
}

}  // namespace

using corral::master::journal::pq;

extern "C" {

#define CORRAL_PQ_FORWARD(...) CORRAL_LAZY_FORWARD(pq, __VA_ARGS__)
CORRAL_PQ_FUNCTIONS(CORRAL_PQ_FORWARD)
#define CORRAL_PQ_FORWARD_PROCEDURE(...) CORRAL_LAZY_FORWARD_PROCEDURE(pq, __VA_ARGS__)
CORRAL_PQ_PROCEDURES(CORRAL_PQ_FORWARD_PROCEDURE)

}  // extern "C"

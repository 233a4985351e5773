#include "master/cluster/pg_async.h"

#include "master/journal/pq_lazy.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>

#include "master/journal/pg_keywords.h"

namespace corral::master::cluster {
namespace {

// The URL's host when it is one name to resolve: not a socket directory, not an address, not
// a list, and no hostaddr given.
std::string name_to_resolve(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  PQfreemem(err);
  if (opts == nullptr) return "";
  std::string host, hostaddr;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    if (std::strcmp(o->keyword, "host") == 0) host = o->val;
    if (std::strcmp(o->keyword, "hostaddr") == 0) hostaddr = o->val;
  }
  PQconninfoFree(opts);
  if (host.empty() || !hostaddr.empty() || host[0] == '/' || host.find(',') != std::string::npos) {
    return "";
  }
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1) {
    return "";
  }
  return host;
}

}  // namespace

PgAsync::PgAsync(uv_loop_t* loop, std::string url, std::string label)
    : loop_(loop),
      url_(std::move(url)),
      label_(std::move(label)),
      host_(name_to_resolve(url_)),
      timer_(loop) {}

PgAsync::~PgAsync() {
  timer_.close();
  if (resolving_ != nullptr) resolving_->data = nullptr;  // its callback frees it
  reset();
}

void PgAsync::query(std::string sql, std::vector<std::string> params, Done done,
                    uint64_t timeout_ms) {
  queue_.push_back({std::move(sql), std::move(params), std::move(done), timeout_ms});
  next();
}

// Starts what comes next: a connection when there is none, else sends what waits.
void PgAsync::next() {
  if (queue_.empty()) return;
  if (state_ == State::kIdle) {
    // The connect, resolving included, has the front query's time.
    timer_.start(queue_.front().timeout_ms, 0, [this] {
      fail_all(Status(Code::kTimeout, "database " + label_ + ": no connection within " +
                                                   std::to_string(queue_.front().timeout_ms) +
                                                   " ms"));
    });
    if (host_.empty()) {
      connect("");
    } else {
      resolve();
    }
    return;
  }
  if (state_ == State::kReady) send_waiting();
}

void PgAsync::resolve() {
  state_ = State::kResolving;
  auto* req = new uv_getaddrinfo_t;
  req->data = this;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  if (uv_getaddrinfo(loop_, req, &PgAsync::on_resolved, host_.c_str(), nullptr, &hints) != 0) {
    delete req;
    fail_all(io_error("database " + label_ + ": cannot resolve " + host_));
    return;
  }
  resolving_ = req;
}

void PgAsync::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* self = static_cast<PgAsync*>(req->data);
  std::string addr;
  for (addrinfo* a = res; a != nullptr && addr.empty() && status == 0; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* bytes = a->ai_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, bytes, text, sizeof text) != nullptr) addr = text;
  }
  uv_freeaddrinfo(res);
  delete req;
  if (self == nullptr) return;  // destroyed meanwhile
  self->resolving_ = nullptr;
  self->state_ = State::kIdle;
  if (self->queue_.empty()) return;  // they failed meanwhile: the next query connects
  if (addr.empty()) {
    self->fail_all(io_error("database " + self->label_ + ": cannot resolve " + self->host_ + ": " +
                            (status != 0 ? uv_strerror(status) : "no address")));
    return;
  }
  self->connect(addr);
}

void PgAsync::connect(const std::string& hostaddr) {
  // A statement waits at most 1 s for a lock (a host's row held by its journal's transaction,
  // say) and then fails, rather than holding up the heartbeats queued behind it.
  journal::PgKeywords kw("corral-cluster", "-c lock_timeout=1000", url_);
  if (!hostaddr.empty()) kw.add("hostaddr", hostaddr.c_str());  // after the URL: it wins
  conn_ = PQconnectStartParams(kw.key_array(), kw.value_array(), 1);
  if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) {
    fail_all(error("cannot connect"));
    return;
  }
  state_ = State::kConnecting;
  step_connect();
}

// One step of libpq's connect: it says which way to wait next, on a socket it may change.
void PgAsync::step_connect() {
  switch (PQconnectPoll(conn_)) {
    case PGRES_POLLING_READING:
      watch(UV_READABLE);
      return;
    case PGRES_POLLING_WRITING:
      watch(UV_WRITABLE);
      return;
    case PGRES_POLLING_OK:
      if (PQsetnonblocking(conn_, 1) != 0 || PQenterPipelineMode(conn_) == 0) {
        fail_all(error("cannot connect"));
        return;
      }
      state_ = State::kReady;
      timer_.stop();
      for (const auto& [channel, fn] : listeners_) {  // before what waits
        queue_.push_front({"LISTEN " + channel, {}, [](Result<PgRows>) {}, 5000});
      }
      next();
      return;
    default:
      fail_all(error("cannot connect"));
      return;
  }
}

void PgAsync::watch(int events) {
  int fd = PQsocket(conn_);
  if (fd != fd_ || !poll_) {
    poll_.reset();
    poll_ = std::make_unique<uv::Handle<uv_poll_t>>();
    if (uv_poll_init(loop_, poll_->get(), fd) != 0) {
      poll_.reset();
      fail_all(error("cannot watch the connection's socket"));
      return;
    }
    poll_->set_live(this);
    fd_ = fd;
  }
  uv_poll_start(poll_->get(), events, [](uv_poll_t* h, int status, int ev) {
    auto* self = uv::owner_of<PgAsync>(h);
    if (self == nullptr) return;
    self->on_ready(status < 0 ? UV_READABLE : ev);  // an error shows when libpq reads
  });
}

// Sends every query not sent yet, each followed by a sync (its own transaction).
void PgAsync::send_waiting() {
  if (sent_ == queue_.size()) return;
  if (sent_ == 0) {
    ++round_trips_;
    arm_deadline();
  }
  for (; sent_ < queue_.size(); ++sent_) {
    const Query& q = queue_[sent_];
    std::vector<const char*> values;
    for (const std::string& p : q.params) values.push_back(p.c_str());
    if (PQsendQueryParams(conn_, q.sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0) == 0 ||
        PQpipelineSync(conn_) == 0) {
      fail_all(error("cannot send a query"));
      return;
    }
  }
  int flushed = PQflush(conn_);
  if (flushed < 0) {
    fail_all(error("cannot send a query"));
    return;
  }
  watch(flushed == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE);
}

// The front query on the wire has its own time, from when it became the front.
void PgAsync::arm_deadline() {
  timer_.start(queue_.front().timeout_ms, 0, [this] {
    fail_all(Status(Code::kTimeout, "database " + label_ + ": no answer within " +
                                        std::to_string(queue_.front().timeout_ms) + " ms"));
  });
}

void PgAsync::on_ready(int events) {
  if (state_ == State::kConnecting) {
    step_connect();
    return;
  }
  if (state_ != State::kReady) return;
  if (sent_ == 0) {  // nothing asked: a notification, or the connection closing
    if ((events & UV_READABLE) == 0) return;
    if (PQconsumeInput(conn_) == 0) {
      fail_all(error("connection lost"));
      return;
    }
    notified();
    return;
  }
  if (events & UV_WRITABLE) {
    int flushed = PQflush(conn_);
    if (flushed < 0) {
      fail_all(error("cannot send a query"));
      return;
    }
    if (flushed == 0) watch(UV_READABLE);
  }
  if (events & UV_READABLE) read_results();
}

// A query's results come, then a null, then its sync: the sync ends it. Nulls carry nothing.
void PgAsync::read_results() {
  if (PQconsumeInput(conn_) == 0) {
    fail_all(error("connection lost"));
    return;
  }
  notified();
  if (conn_ == nullptr) return;
  int nulls = 0;  // two in a row: libpq has nothing more without reading
  while (sent_ > 0 && nulls < 2 && PQisBusy(conn_) == 0) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {
      ++nulls;
      continue;
    }
    nulls = 0;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      answered();  // may queue more, or fail everything: see the header
      continue;
    }
    if (st == PGRES_TUPLES_OK) {
      for (int i = 0; i < PQntuples(r); ++i) {
        std::vector<std::string> row;
        for (int c = 0; c < PQnfields(r); ++c) {
          row.emplace_back(PQgetvalue(r, i, c), static_cast<size_t>(PQgetlength(r, i, c)));
        }
        rows_.rows.push_back(std::move(row));
      }
    } else if (st != PGRES_COMMAND_OK && failed_.empty()) {
      const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
      failed_ = "database " + label_ + ": " +
                (primary                        ? primary
                 : st == PGRES_PIPELINE_ABORTED ? "not run, the query before it failed"
                                                : PQresultErrorMessage(r));
    }
    PQclear(r);
  }
  if (conn_ != nullptr) notified();  // any that came among the results
}

// The front query's sync came: it is answered, and the next on the wire has its deadline.
void PgAsync::answered() {
  Query q = std::move(queue_.front());
  queue_.pop_front();
  --sent_;
  ++queries_;
  if (sent_ > 0) {
    arm_deadline();
  } else {
    timer_.stop();
  }
  Result<PgRows> out =
      failed_.empty() ? Result<PgRows>(std::move(rows_)) : Result<PgRows>(io_error(failed_));
  rows_ = {};
  failed_.clear();
  q.done(std::move(out));
  next();
}

void PgAsync::listen(const std::string& channel, std::function<void(const std::string&)> fn) {
  listeners_.emplace_back(channel, std::move(fn));
  if (state_ == State::kReady) query("LISTEN " + channel, {}, [](Result<PgRows>) {});
}

// Hands every notification read so far to its listener, but those this connection sent.
void PgAsync::notified() {
  while (PGnotify* n = PQnotifies(conn_)) {
    const std::string channel = n->relname, payload = n->extra;
    const bool own = n->be_pid == PQbackendPID(conn_);
    PQfreemem(n);
    if (own) continue;
    for (const auto& [name, fn] : listeners_) {
      if (name == channel) fn(payload);
    }
    if (conn_ == nullptr) return;  // a listener's query failed the connection
  }
}

// The connection is dropped and every query waiting fails with `s`: the next one connects.
void PgAsync::fail_all(const Status& s) {
  timer_.stop();
  reset();
  std::deque<Query> failed = std::move(queue_);
  queue_.clear();
  sent_ = 0;
  rows_ = {};
  failed_.clear();
  queries_ += failed.size();
  for (Query& q : failed) q.done(s);
}

void PgAsync::reset() {
  poll_.reset();  // before PQfinish closes the socket it watches
  fd_ = -1;
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  state_ = resolving_ != nullptr ? State::kResolving : State::kIdle;
}

Status PgAsync::error(const std::string& what) const {
  const std::string& why = journal::pq_load_failure();
  std::string msg = conn_ != nullptr ? PQerrorMessage(conn_) : why.empty() ? "out of memory" : why;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return io_error("database " + label_ + ": " + what + ": " + msg);
}

}  // namespace corral::master::cluster

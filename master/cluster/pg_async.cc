#include "master/cluster/pg_async.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>

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
  if (state_ == State::kIdle || state_ == State::kReady) next();
}

// Starts what comes next: a connection when there is none, else the front query.
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
  if (state_ == State::kReady) send_front();
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
  // Keywords before "dbname" are defaults the URL overrides; hostaddr, after it, wins.
  std::vector<const char*> keys = {"connect_timeout", "application_name", "client_encoding",
                                   "dbname"};
  std::vector<const char*> values = {"10", "corral-cluster", "UTF8", url_.c_str()};
  if (!hostaddr.empty()) {
    keys.push_back("hostaddr");
    values.push_back(hostaddr.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectStartParams(keys.data(), values.data(), 1);
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
      if (PQsetnonblocking(conn_, 1) != 0) {
        fail_all(error("cannot connect"));
        return;
      }
      state_ = State::kReady;
      timer_.stop();
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

void PgAsync::send_front() {
  const Query& q = queue_.front();
  std::vector<const char*> values;
  for (const std::string& p : q.params) values.push_back(p.c_str());
  if (PQsendQueryParams(conn_, q.sql.c_str(), static_cast<int>(values.size()), nullptr,
                        values.data(), nullptr, nullptr, 0) == 0) {
    fail_all(error("cannot send a query"));
    return;
  }
  state_ = State::kBusy;
  rows_ = {};
  failed_.clear();
  timer_.start(q.timeout_ms, 0, [this] {
    fail_all(Status(Code::kTimeout, "database " + label_ + ": no answer within " +
                                                 std::to_string(queue_.front().timeout_ms) +
                                                 " ms"));
  });
  int flushed = PQflush(conn_);
  if (flushed < 0) {
    fail_all(error("cannot send a query"));
    return;
  }
  watch(flushed == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE);
}

void PgAsync::on_ready(int events) {
  if (state_ == State::kConnecting) {
    step_connect();
    return;
  }
  if (state_ != State::kBusy) return;
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

void PgAsync::read_results() {
  if (PQconsumeInput(conn_) == 0) {
    fail_all(error("connection lost"));
    return;
  }
  while (PQisBusy(conn_) == 0) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {  // the query is done
      timer_.stop();
      Query q = std::move(queue_.front());
      queue_.pop_front();
      state_ = State::kReady;
      Result<PgRows> out = failed_.empty() ? Result<PgRows>(std::move(rows_))
                                           : Result<PgRows>(io_error(failed_));
      q.done(std::move(out));  // may queue more, or destroy nothing else: see the header
      next();
      return;
    }
    ExecStatusType st = PQresultStatus(r);
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
      failed_ = "database " + label_ + ": " + (primary ? primary : PQresultErrorMessage(r));
    }
    PQclear(r);
  }
}

// The connection is dropped and every query waiting fails with `s`: the next one connects.
void PgAsync::fail_all(const Status& s) {
  timer_.stop();
  reset();
  std::deque<Query> failed = std::move(queue_);
  queue_.clear();
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
  std::string msg = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return io_error("database " + label_ + ": " + what + ": " + msg);
}

}  // namespace corral::master::cluster

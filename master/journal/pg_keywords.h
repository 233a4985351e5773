// The settings every connection of corral to PostgreSQL starts with. They come before the URL
// ("dbname", last), whose own settings win over them:
//  - connect_timeout: a connection that cannot be made fails within 10 s;
//  - keepalives and tcp_user_timeout: a connection whose link went dead (a cable, a partition)
//    fails within about 10 s, where the kernel would retransmit for fifteen minutes; an idle
//    one is probed after 5 s;
//  - the same on the server's side of the session (kServerSide): the server drops the session
//    of a host cut off within about 11 s, instead of keeping it (a connection slot, and any
//    lock its transaction holds) until its kernel gives up, for minutes or, idle, hours;
//  - `options`: the session's server settings (see the callers).
#pragma once

#include <string>
#include <vector>

namespace corral::master::journal {

struct PgKeywords {
  static constexpr const char* kServerSide =
      "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3 "
      "-c tcp_user_timeout=10000 ";

  std::vector<const char*> keys, values;
  std::string options_;

  // `application`: application_name; `options`: "-c name=value ..." for the session.
  PgKeywords(const char* application, const char* options, const std::string& url)
      : options_(std::string(kServerSide) + options) {
    add("connect_timeout", "10");
    add("keepalives", "1");
    add("keepalives_idle", "5");
    add("keepalives_interval", "2");
    add("keepalives_count", "3");
    add("tcp_user_timeout", "10000");
    add("application_name", application);
    add("client_encoding", "UTF8");
    add("options", options_.c_str());
    add("dbname", url.c_str());
  }
  PgKeywords(const PgKeywords&) = delete;  // `values` points into options_
  PgKeywords& operator=(const PgKeywords&) = delete;

  void add(const char* key, const char* value) {
    keys.push_back(key);
    values.push_back(value);
  }
  // The arrays libpq takes, each ending in nullptr.
  const char* const* key_array() {
    terminate();
    return keys.data();
  }
  const char* const* value_array() {
    terminate();
    return values.data();
  }

 private:
  void terminate() {
    if (keys.empty() || keys.back() != nullptr) add(nullptr, nullptr);
  }
};

}  // namespace corral::master::journal

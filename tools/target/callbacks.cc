// The job API's callbacks: a job created with "callback": URL is POSTed to that URL when it
// ends, {"id", "status": "done"|"failed"}, as a webhook sender would: a call that gets no
// answer or a 5xx is tried again every 200 ms, up to 50 times; any other answer ends it (2xx:
// delivered; 409: it had arrived before). The POST is a blocking libcurl call on libuv's thread
// pool, so the loop never waits on it.
#include <curl/curl.h>

#include "tools/target/target.h"

namespace corral::target {

namespace {

size_t discard(char*, size_t size, size_t n, void*) { return size * n; }

void post(uv_work_t* w) {
  auto* call = static_cast<Target::Call*>(w->data);
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, call->url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call->body.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  call->status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &call->status);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
}

}  // namespace

void Target::call_back(std::string url, nlohmann::json body, uint64_t after_ms) {
  static const bool curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)curl_ready;
  auto call = std::make_unique<Call>(loop_);
  call->target_alive = alive_;
  call->target = this;
  call->id = ++next_call_;
  call->url = std::move(url);
  call->body = body.dump();
  schedule(std::move(call), after_ms);
}

void Target::schedule(std::unique_ptr<Call> call, uint64_t after_ms) {
  Call& c = *call;
  const uint64_t id = c.id;
  calls_[id] = std::move(call);
  c.timer.start(after_ms, 0, [this, id] {
    // Off to the thread pool: the call owns itself until it comes back (on_posted).
    Call* in_flight = calls_[id].release();
    calls_.erase(id);
    in_flight->work.data = in_flight;
    uv_queue_work(loop_, &in_flight->work, post, &Target::on_posted);
  });
}

void Target::on_posted(uv_work_t* w, int /*status*/) {
  std::unique_ptr<Call> call(static_cast<Call*>(w->data));
  if (!*call->target_alive) return;
  Target& t = *call->target;
  const long s = call->status;
  if ((s == 0 || s >= 500) && --call->tries_left > 0) {
    t.schedule(std::move(call), 200);
    return;
  }
  if (s >= 200 && s < 300) ++t.callbacks_delivered_;
}

}  // namespace corral::target

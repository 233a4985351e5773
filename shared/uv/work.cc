#include "shared/uv/work.h"

#include <memory>

namespace corral::uv {
namespace {

struct Work {
  uv_work_t req{};
  std::function<void()> work, done;
};

}  // namespace

Status queue_work(uv_loop_t* loop, std::function<void()> work, std::function<void()> done) {
  auto w = std::make_unique<Work>();
  w->work = std::move(work);
  w->done = std::move(done);
  w->req.data = w.get();
  int rc = uv_queue_work(
      loop, &w->req, [](uv_work_t* req) { static_cast<Work*>(req->data)->work(); },
      [](uv_work_t* req, int) {
        std::unique_ptr<Work> owned(static_cast<Work*>(req->data));
        owned->done();
      });
  if (rc != 0) return Status(Code::kInternal, std::string("uv_queue_work: ") + uv_strerror(rc));
  w.release();  // owned by the request until `done`
  return Status::ok();
}

}  // namespace corral::uv

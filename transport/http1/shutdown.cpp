// client_core::shutdown: in thread mode on the caller's thread, which joins
// the io threads; in loop mode as one step on the loop's driver.

#include "georoute/transport/http1/pool.hpp"
#include "georoute/transport/http1/response.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace georoute::transport::http1 {

void client_core::shutdown() {
  if (shut_) return;
  shut_ = true;
  if (loop_)
    shutdown_on_loop();
  else
    shutdown_threads();
}

void client_core::shutdown_threads() {
  std::vector<job_ptr> queued;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    stopping_flag_ = true;
    for (auto& [key, p] : pools_)
      while (auto j = pop_waiting_locked(*p))
        queued.push_back(std::move(j));
  }
  for (auto& j : queued)
    post_complete(j, failed(failure::reset, shut_down_text));
  std::vector<std::weak_ptr<connection_base>> conns;
  {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    for (auto& [ptr, weak] : live_conns_)
      conns.push_back(weak);
  }
  for (auto& weak : conns)
    if (auto c = weak.lock()) c->abort();
  conns.clear();
  // Without stop(): run() returns once every aborted step has completed.
  guard_.reset();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    // Idle sockets go while ioc_ is still alive. An idle connection and its
    // pool point at each other: break that cycle first.
    for (auto& [key, p] : pools_)
      p->idle.clear();
    pools_.clear();
    pools_by_endpoint_.clear();
  }
  // Safety net: nothing should be left, but every callback runs once.
  std::unordered_map<const job*, job_ptr> left;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    left.swap(live_jobs_);
  }
  for (auto& [ptr, j] : left)
    complete(j, failed(failure::reset, shut_down_text));
}

// Loop mode. The sockets belong to the loop's driver thread, so the work of
// shutting down (stop_step) runs there:
// - called on the loop thread (an actor or a completion dropped the last
//   reference): right here. The loop cannot be run from here (this frame may
//   be inside one of its handlers) nor waited for (it is this thread), and
//   it need not be: every job completes now, and the aborted handlers that
//   run later find their jobs done; they keep the core alive until then.
// - another thread while the loop runs: posted, and waited for (the loop
//   never blocks for long: a handler or a wake ends its sleep).
// - another thread and nobody drives the loop (the actor system ended
//   before the client): this thread becomes the driver, runs the step and
//   then the aborted handlers of its own connections, within a bound (a
//   resolve that is still waiting for DNS cannot be interrupted).
void client_core::shutdown_on_loop() {
  if (loop_->on_loop_thread()) return stop_step();
  net::post(*ioc_, [self = shared_from_this()] { self->stop_step(); });
  std::unique_lock<std::mutex> lock{step_mtx_};
  for (;;) {
    if (step_cv_.wait_for(lock, std::chrono::milliseconds{20},
                          [this] { return step_done_; }))
      return;
    lock.unlock();
    if (loop_->try_become_driver()) {
      stop_step(); // the posted one will find it done
      auto until = steady::now() + std::chrono::seconds{2};
      try {
        loop_->poll();
        while (live_connections() > 0 && steady::now() < until)
          loop_->run_one_until(
              std::min(until, steady::now() + std::chrono::milliseconds{10}));
      } catch (...) { // handlers are guarded; nothing to add here
      }
      loop_->stop_driving();
      return;
    }
    lock.lock();
  }
}

// On the loop's driver: what shutdown_threads does, without threads to join.
void client_core::stop_step() {
  {
    std::lock_guard<std::mutex> guard{step_mtx_};
    if (step_started_) return;
    step_started_ = true;
  }
  std::vector<job_ptr> queued;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    stopping_flag_ = true;
    for (auto& [key, p] : pools_)
      while (auto j = pop_waiting_locked(*p))
        queued.push_back(std::move(j));
  }
  for (auto& j : queued)
    complete(j, failed(failure::reset, shut_down_text));
  std::vector<std::weak_ptr<connection_base>> conns;
  {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    for (auto& [ptr, weak] : live_conns_)
      conns.push_back(weak);
  }
  for (auto& weak : conns)
    if (auto c = weak.lock()) c->abort_now();
  conns.clear();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [key, p] : pools_)
      p->idle.clear();
    pools_.clear();
    pools_by_endpoint_.clear();
  }
  std::unordered_map<const job*, job_ptr> left;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    left.swap(live_jobs_);
  }
  for (auto& [ptr, j] : left)
    complete(j, failed(failure::reset, shut_down_text));
  {
    std::lock_guard<std::mutex> guard{step_mtx_};
    step_done_ = true;
  }
  step_cv_.notify_all();
}

} // namespace georoute::transport::http1

#include "georoute/actors/home_thread.hpp"

#include "georoute/actors/own_thread.hpp"
#include "georoute/transport/io_loop.hpp"

#include <caf/detail/set_thread_name.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace georoute {

namespace {

using caf::resumable;

/// How many actors run before the thread looks at its sockets again.
constexpr size_t batch = 64;

/// Hands every actor it is given to the system's scheduler: the context of
/// what runs on the home thread, for the actors it sends to (a pinned
/// actor's own `enqueue` never comes here; it uses the pin unit).
class outbound_unit final : public caf::execution_unit {
public:
  explicit outbound_unit(caf::actor_system* sys) : caf::execution_unit(sys) {}
  void exec_later(resumable* job) override {
    system().scheduler().enqueue(job);
  }
};

} // namespace

struct home_thread::impl final : caf::execution_unit {
  impl(caf::actor_system& sys, std::string n)
      : caf::execution_unit(&sys), out(&sys), name(std::move(n)),
        io(std::make_shared<transport::io_loop>()),
        max_throughput(sys.scheduler().max_throughput()) {}

  /// The pin unit: a pinned actor became ready (any thread).
  void exec_later(resumable* job) override {
    // `stopped` is written by the home thread only (in `finish`).
    if (io->on_loop_thread() && !stopped) {
      local.push_back(job);
      return;
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (!stopped) {
        foreign.push_back(job);
        if (sleeping && !wake_posted) wake = wake_posted = true;
        job = nullptr;
      }
    }
    // After the home stopped, the actor runs where any other would.
    if (job)
      system().scheduler().enqueue(job);
    else if (wake)
      io->post([] {});
  }

  bool take_foreign() {
    std::lock_guard<std::mutex> guard{mtx};
    for (auto* job : foreign)
      local.push_back(job);
    foreign.clear();
    return stop_requested;
  }

  void resume(resumable* job) {
    // A pinned actor never ends the thread (that answer is the engine
    // loop's stop job's).
    detail::resume_job(job, &out, max_throughput,
                       [this](resumable* j) { local.push_back(j); });
  }

  void run() {
    io->become_driver();
    caf::detail::set_thread_name(name.c_str());
    for (;;) {
      if (take_foreign() && local.empty()) break;
      for (size_t n = 0; n < batch && !local.empty(); ++n) {
        auto* job = local.front();
        local.pop_front();
        resume(job);
      }
      detail::guarded([&] { io->poll(); });
      if (!local.empty()) continue;
      {
        std::lock_guard<std::mutex> guard{mtx};
        if (!foreign.empty()) continue;
        if (stop_requested) break;
        sleeping = true;
      }
      // Nothing to do: sleep until a socket is ready or a handler is posted
      // (a wake, an HTTP send from another thread).
      detail::guarded([&] { io->run_one(); });
      std::lock_guard<std::mutex> guard{mtx};
      sleeping = false;
      wake_posted = false;
    }
    finish();
  }

  /// The thread's last act: from now on pinned actors go to the system's
  /// scheduler, with those still queued; what is still queued in the io_loop
  /// (wakes, the handlers of a client closed while the thread ran) runs once
  /// more.
  void finish() {
    std::vector<resumable*> left;
    {
      std::lock_guard<std::mutex> guard{mtx};
      stopped = true;
      left.assign(local.begin(), local.end());
      left.insert(left.end(), foreign.begin(), foreign.end());
      local.clear();
      foreign.clear();
    }
    for (auto* job : left)
      system().scheduler().enqueue(job);
    detail::guarded([&] { io->poll(); });
    io->stop_driving();
  }

  /// Asks the thread to end after what it runs (any thread).
  void request_stop() {
    std::lock_guard<std::mutex> guard{mtx};
    stop_requested = true;
    if (sleeping && !wake_posted) {
      wake_posted = true;
      io->post([] {});
    }
  }

  outbound_unit out;
  std::string name;
  std::shared_ptr<transport::io_loop> io;
  size_t max_throughput;
  std::thread thread;
  // Home thread only.
  std::deque<resumable*> local;
  // Guarded by mtx.
  std::mutex mtx;
  std::vector<resumable*> foreign;
  bool sleeping = false;
  bool wake_posted = false;
  bool stop_requested = false;
  bool stopped = false;
};

home_thread::home_thread(caf::actor_system& sys, std::string name)
    : impl_(std::make_shared<impl>(sys, std::move(name))) {
  // The thread holds its own share: it may outlive this object (below).
  impl_->thread = std::thread{[p = impl_] { p->run(); }};
  tid_ = impl_->thread.get_id();
}

home_thread::~home_thread() {
  if (on_thread()) {
    // Let go of by what it runs (nobody stopped it first): it cannot wait
    // for itself; it ends after the current actor and frees itself.
    impl_->request_stop();
    impl_->thread.detach();
    return;
  }
  stop();
}

std::shared_ptr<transport::io_loop> home_thread::io() const {
  return impl_->io;
}

caf::execution_unit* home_thread::pin_unit() noexcept {
  return impl_.get();
}

bool home_thread::on_thread() const noexcept {
  return tid_ == std::this_thread::get_id();
}

void home_thread::stop() {
  impl_->request_stop();
  std::lock_guard<std::mutex> guard{join_mtx_};
  if (impl_->thread.joinable()) impl_->thread.join();
}

} // namespace georoute

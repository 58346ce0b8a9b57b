#include "actors/engine_loop.hpp"

#include "transport/io_loop.hpp"

#include <atomic>
#include <caf/actor_control_block.hpp>
#include <caf/detail/set_thread_name.hpp>
#include <caf/detail/simple_actor_clock.hpp>
#include <caf/execution_unit.hpp>
#include <caf/intrusive_ptr.hpp>
#include <caf/resumable.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace georoute {

namespace {

using caf::resumable;
using clock_base = caf::detail::simple_actor_clock;

/// CAF's single-threaded clock, owned by whichever thread drives the loop.
/// On that thread every call goes straight to `simple_actor_clock`; other
/// threads queue the same events CAF's thread-safe clock would build, and
/// the loop applies them in the order they were made.
class loop_clock final : public clock_base {
public:
  explicit loop_clock(transport::io_loop& io) : io_(io) {}

  void set_ordinary_timeout(time_point t, caf::abstract_actor* self,
                            caf::atom_value type, uint64_t id) override {
    if (io_.on_loop_thread())
      return clock_base::set_ordinary_timeout(t, self, type, id);
    push(new ordinary_timeout(t, self->ctrl(), type, id));
  }

  void set_multi_timeout(time_point t, caf::abstract_actor* self,
                         caf::atom_value type, uint64_t id) override {
    if (io_.on_loop_thread())
      return clock_base::set_multi_timeout(t, self, type, id);
    push(new multi_timeout(t, self->ctrl(), type, id));
  }

  void set_request_timeout(time_point t, caf::abstract_actor* self,
                           caf::message_id id) override {
    if (io_.on_loop_thread())
      return clock_base::set_request_timeout(t, self, id);
    push(new request_timeout(t, self->ctrl(), id));
  }

  void cancel_ordinary_timeout(caf::abstract_actor* self,
                               caf::atom_value type) override {
    if (io_.on_loop_thread())
      return clock_base::cancel_ordinary_timeout(self, type);
    push(new ordinary_timeout_cancellation(self->id(), type));
  }

  void cancel_request_timeout(caf::abstract_actor* self,
                              caf::message_id id) override {
    if (io_.on_loop_thread())
      return clock_base::cancel_request_timeout(self, id);
    push(new request_timeout_cancellation(self->id(), id));
  }

  void cancel_timeouts(caf::abstract_actor* self) override {
    if (io_.on_loop_thread()) return clock_base::cancel_timeouts(self);
    push(new timeouts_cancellation(self->id()));
  }

  void schedule_message(time_point t, caf::strong_actor_ptr receiver,
                        caf::mailbox_element_ptr content) override {
    if (io_.on_loop_thread())
      return clock_base::schedule_message(t, std::move(receiver),
                                          std::move(content));
    push(new actor_msg(t, std::move(receiver), std::move(content)));
  }

  void schedule_message(time_point t, caf::group target,
                        caf::strong_actor_ptr sender,
                        caf::message content) override {
    if (io_.on_loop_thread())
      return clock_base::schedule_message(
          t, std::move(target), std::move(sender), std::move(content));
    push(new group_msg(t, std::move(target), std::move(sender),
                       std::move(content)));
  }

  void cancel_all() override {
    if (io_.on_loop_thread()) return clock_base::cancel_all();
    push(new drop_all);
  }

  // -- the driver's side
  // -------------------------------------------------------

  /// When the loop must look at the clock again (nothing scheduled: never).
  std::optional<time_point> next_due() const {
    if (schedule_.empty()) return std::nullopt;
    return schedule_.begin()->first;
  }

  /// Ships every due event (each is an enqueue on the loop thread).
  void fire_due() {
    if (!schedule_.empty() && schedule_.begin()->first <= now())
      trigger_expired_timeouts();
  }

  /// From now on events from other threads are dropped, and everything
  /// scheduled goes (CAF's clock thread does the same at shutdown). Called
  /// by the driver after the loop thread ended.
  void shut_down() {
    std::vector<unique_event_ptr> dropped;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopped_ = true;
      dropped.swap(inbox_);
    }
    dropped.clear(); // releases actor references outside the lock
    clock_base::cancel_all();
  }

private:
  void push(event* raw) {
    unique_event_ptr ev{raw};
    bool first = false;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopped_) return; // `ev` goes after the lock is released
      first = inbox_.empty();
      inbox_.push_back(std::move(ev));
    }
    // One post carries every event queued until the loop drains the inbox.
    if (first) io_.post([this] { drain(); });
  }

  // On the driver. The same dispatch as thread_safe_actor_clock's loop.
  void drain() {
    std::vector<unique_event_ptr> events;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopped_) return;
      events.swap(inbox_);
    }
    for (auto& x : events) {
      switch (x->subtype) {
      case ordinary_timeout_cancellation_type:
        handle(static_cast<ordinary_timeout_cancellation&>(*x));
        break;
      case request_timeout_cancellation_type:
        handle(static_cast<request_timeout_cancellation&>(*x));
        break;
      case timeouts_cancellation_type:
        handle(static_cast<timeouts_cancellation&>(*x));
        break;
      case drop_all_type:
        clock_base::cancel_all();
        break;
      case ordinary_timeout_type:
        add_schedule_entry(std::unique_ptr<ordinary_timeout>{
            static_cast<ordinary_timeout*>(x.release())});
        break;
      case multi_timeout_type:
        add_schedule_entry(std::unique_ptr<multi_timeout>{
            static_cast<multi_timeout*>(x.release())});
        break;
      case request_timeout_type:
        add_schedule_entry(std::unique_ptr<request_timeout>{
            static_cast<request_timeout*>(x.release())});
        break;
      case actor_msg_type:
        add_schedule_entry(
            std::unique_ptr<actor_msg>{static_cast<actor_msg*>(x.release())});
        break;
      case group_msg_type:
        add_schedule_entry(
            std::unique_ptr<group_msg>{static_cast<group_msg*>(x.release())});
        break;
      default:
        break;
      }
    }
  }

  transport::io_loop& io_;
  std::mutex mtx_;
  bool stopped_ = false;
  std::vector<unique_event_ptr> inbox_;
};

/// What `stop` enqueues: the loop thread returns when it resumes this. It
/// lives on `stop`'s stack, which outlives the loop thread.
class stop_job final : public resumable {
public:
  resume_result resume(caf::execution_unit*, size_t) override {
    return resumable::shutdown_execution_unit;
  }
  void intrusive_ptr_add_ref_impl() override {}
  void intrusive_ptr_release_impl() override {}
};

/// How many actors run before the loop looks at sockets and timers again.
constexpr size_t batch = 64;

} // namespace

struct engine_loop::impl final : caf::execution_unit {
  impl(engine_loop& p, caf::actor_system& sys)
      : caf::execution_unit(&sys), parent(p),
        io(std::make_shared<transport::io_loop>()), clock(*io) {}

  /// Only resumables run by this unit call this: always the loop thread.
  void exec_later(resumable* job) override { local.push_back(job); }

  void enqueue(resumable* job) {
    if (io->on_loop_thread() && !stopped.load(std::memory_order_relaxed)) {
      local.push_back(job);
      return;
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (!stopped.load(std::memory_order_relaxed)) {
        foreign.push_back(job);
        has_foreign.store(true, std::memory_order_release);
        if (sleeping && !wake_posted) wake = wake_posted = true;
        job = nullptr;
      }
    }
    if (job) {
      // After the loop ended: clean up here, as CAF's coordinator does for
      // what is left in its queues at shutdown.
      caf::scheduler::abstract_coordinator::cleanup_and_release(job);
      return;
    }
    if (wake) io->post([] {});
  }

  void take_foreign() {
    if (!has_foreign.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> guard{mtx};
    for (auto* job : foreign)
      local.push_back(job);
    foreign.clear();
    has_foreign.store(false, std::memory_order_relaxed);
  }

  /// Resumes one job; false when it told the loop to end.
  bool resume(resumable* job) {
    switch (job->resume(this, parent.max_throughput())) {
    case resumable::resume_later:
      local.push_back(job); // keeps its reference
      break;
    case resumable::done:
    case resumable::awaiting_message:
      intrusive_ptr_release(job);
      break;
    case resumable::shutdown_execution_unit:
      return false;
    }
    return true;
  }

  /// The io_context runs handlers of other code (the HTTP client's are
  /// guarded, a throwing one is a bug there): the loop survives it.
  template <class F>
  static void guarded(F&& f) {
    try {
      f();
    } catch (...) {
    }
  }

  void run() {
    io->become_driver();
    caf::detail::set_thread_name("caf.engine-loop");
    system().thread_started();
    for (;;) {
      take_foreign();
      for (size_t n = 0; n < batch && !local.empty(); ++n) {
        auto* job = local.front();
        local.pop_front();
        if (!resume(job)) {
          system().thread_terminates();
          io->stop_driving();
          return;
        }
      }
      guarded([&] { clock.fire_due(); });
      guarded([&] { io->poll(); });
      if (!local.empty()) continue;
      {
        std::lock_guard<std::mutex> guard{mtx};
        if (!foreign.empty()) continue;
        sleeping = true;
      }
      // Nothing to do: sleep in the io_context until a socket is ready, a
      // handler is posted (a wake, a clock event from another thread) or the
      // next CAF timer is due.
      if (auto due = clock.next_due())
        guarded([&] { io->run_one_until(*due); });
      else
        guarded([&] { io->run_one(); });
      std::lock_guard<std::mutex> guard{mtx};
      sleeping = false;
      wake_posted = false;
    }
  }

  /// After the loop thread ended, on the stopping thread.
  void finish() {
    io->become_driver();
    std::vector<resumable*> left;
    {
      std::lock_guard<std::mutex> guard{mtx};
      stopped.store(true);
      left.assign(local.begin(), local.end());
      left.insert(left.end(), foreign.begin(), foreign.end());
      local.clear();
      foreign.clear();
    }
    for (auto* job : left)
      caf::scheduler::abstract_coordinator::cleanup_and_release(job);
    clock.shut_down();
    // What is still queued in the io_context: wakes, clock batches (dropped
    // now), handlers of a client that outlived the system. Run them while
    // the system still exists.
    guarded([&] { io->poll(); });
    io->stop_driving();
  }

  engine_loop& parent;
  std::shared_ptr<transport::io_loop> io;
  loop_clock clock;
  std::thread thread;
  // Loop thread only.
  std::deque<resumable*> local;
  // Guarded by mtx.
  std::mutex mtx;
  std::vector<resumable*> foreign;
  bool sleeping = false;
  bool wake_posted = false;
  std::atomic<bool> has_foreign{false};
  std::atomic<bool> stopped{false};
};

caf::actor_system::module* engine_loop::make(caf::actor_system& sys,
                                             caf::detail::type_list<>) {
  return new engine_loop(sys);
}

engine_loop::engine_loop(caf::actor_system& sys)
    : super(sys), impl_(std::make_unique<impl>(*this, sys)) {}

engine_loop::~engine_loop() = default;

void engine_loop::init(caf::actor_system_config& cfg) {
  super::init(cfg);
  num_workers_ = 1; // see "One loop" in the header
}

void engine_loop::start() {
  impl_->thread = std::thread{[this] { impl_->run(); }};
  super::start(); // the printer actor (detached)
}

void engine_loop::stop() {
  stop_job sj;
  enqueue(&sj);
  if (impl_->thread.joinable()) impl_->thread.join();
  // As CAF's coordinator: utility actors after the workers.
  stop_actors();
  impl_->finish();
}

void engine_loop::enqueue(caf::resumable* what) {
  impl_->enqueue(what);
}

caf::actor_clock& engine_loop::clock() noexcept {
  return impl_->clock;
}

std::shared_ptr<transport::io_loop> engine_loop::io() const {
  return impl_->io;
}

std::shared_ptr<transport::io_loop> engine_loop_io(caf::actor_system& sys) {
  if (auto* loop = dynamic_cast<engine_loop*>(&sys.scheduler()))
    return loop->io();
  return nullptr;
}

} // namespace georoute

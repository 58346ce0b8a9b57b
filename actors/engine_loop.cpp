#include "georoute/actors/engine_loop.hpp"

#include "georoute/actors/own_thread.hpp"
#include "georoute/transport/io_loop.hpp"

#include <atomic>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <boost/intrusive/unordered_set.hpp>
#include <caf/actor_control_block.hpp>
#include <caf/detail/set_thread_name.hpp>
#include <caf/detail/simple_actor_clock.hpp>
#include <caf/execution_unit.hpp>
#include <caf/intrusive_ptr.hpp>
#include <caf/resumable.hpp>
#include <caf/sec.hpp>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace georoute {

namespace {

using caf::resumable;
using clock_base = caf::detail::simple_actor_clock;
namespace bi = boost::intrusive;

struct pending_request;

/// The request timeouts of one actor, in order of arrival.
using actor_requests = bi::list<pending_request, bi::constant_time_size<false>>;

/// A request timeout held by the loop (see `request_timeouts`). Linked into
/// three intrusive containers at once, so holding one costs no allocation
/// and dropping one touches no container more than once.
struct pending_request : bi::set_base_hook<bi::optimize_size<true>>,
                         bi::unordered_set_base_hook<>,
                         bi::list_base_hook<> {
  clock_base::time_point due;
  caf::actor_id aid = 0;
  caf::message_id id;
  /// Order of arrival: only looked at when one actor has several timeouts
  /// for the same message id, where the oldest is the one a cancel drops.
  uint64_t seq = 0;
  caf::strong_actor_ptr self;
  /// The list of its actor (in `request_timeouts::actors_`).
  actor_requests* owner = nullptr;
};

struct request_key {
  caf::actor_id aid;
  uint64_t mid;
  bool operator==(const request_key& x) const noexcept {
    return aid == x.aid && mid == x.mid;
  }
};

struct key_of_request {
  using type = request_key;
  request_key operator()(const pending_request& x) const noexcept {
    return {x.aid, x.id.integer_value()};
  }
};

/// The buckets are a power of two (the low bits pick one), and request ids
/// of one actor are consecutive: mix every bit into the low ones.
struct hash_request_key {
  size_t operator()(const request_key& k) const noexcept {
    uint64_t h = k.aid * 0x9e3779b97f4a7c15ULL ^ k.mid;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return static_cast<size_t>(h);
  }
};

struct by_due {
  bool operator()(const pending_request& x,
                  const pending_request& y) const noexcept {
    return x.due < y.due;
  }
};

/// The request timeouts set on (or handed to) the loop thread. CAF's
/// `simple_actor_clock` keeps them in its two multimaps like every other
/// timer: an allocated event and two tree nodes per request, and a linear
/// walk over all the actor's timers to cancel one. A caller has one per
/// request in flight, and CAF 0.17 never cancels them on a reply: each
/// stays until its deadline, so at 20k requests/s with 10 s timeouts the
/// clock holds some 200k of them. Here an entry is one recycled object in
/// - a tree by deadline (equal deadlines in order of arrival, as in CAF's
///   schedule); new deadlines are nearly always the latest, and appending
///   one is constant time;
/// - a hash index by (actor id, message id), for a cancel in O(1);
/// - a list per actor, for `cancel_timeouts` when an actor terminates.
/// Loop thread only.
class request_timeouts {
public:
  using time_point = clock_base::time_point;

  request_timeouts() { spare_actor_nodes_.reserve(max_spare_actor_nodes); }

  ~request_timeouts() {
    clear();
    spares_.clear_and_dispose([](pending_request* x) { delete x; });
  }

  request_timeouts(const request_timeouts&) = delete;
  request_timeouts& operator=(const request_timeouts&) = delete;

  size_t size() const noexcept { return by_due_.size(); }

  bool empty() const noexcept { return by_due_.empty(); }

  /// The earliest deadline; only when not empty.
  time_point front_due() const noexcept { return by_due_.begin()->due; }

  void add(time_point due, caf::strong_actor_ptr self, caf::message_id id) {
    // The two allocations that may fail come before anything is linked.
    auto aid = self->id();
    auto* x = make_entry();
    try {
      x->owner = &requests_of(aid);
    } catch (...) {
      recycle(*x);
      throw;
    }
    x->due = due;
    x->aid = aid;
    x->id = id;
    x->seq = ++seq_;
    x->self = std::move(self);
    // Nearly always the latest deadline (the same timeout from a later
    // now): appended in constant time, after any equal one.
    if (by_due_.empty() || due >= latest_due_) {
      by_due_.push_back(*x);
      latest_due_ = due;
    } else {
      by_due_.insert(*x);
    }
    index_.insert(*x);
    x->owner->push_back(*x);
    if (index_.size() > buckets_.size()) rehash(buckets_.size() * 2);
    held_.store(size(), std::memory_order_relaxed);
  }

  /// Drops the timeout of `aid` for `id`, the oldest if there are several;
  /// nothing when there is none (answered, fired, never set).
  void cancel(caf::actor_id aid, caf::message_id id) {
    auto range = index_.equal_range(request_key{aid, id.integer_value()});
    if (range.first == range.second) return;
    auto oldest = range.first;
    for (auto i = std::next(range.first); i != range.second; ++i)
      if (i->seq < oldest->seq) oldest = i;
    auto self = take(*oldest);
    // `self` goes last: its release may end the actor, which cancels its
    // timeouts, i.e. comes back here.
  }

  /// Drops every request timeout of `aid` (the actor terminates).
  void cancel_actor(caf::actor_id aid) {
    for (;;) {
      caf::strong_actor_ptr self;
      auto i = actors_.find(aid);
      if (i == actors_.end()) return;
      self = take(i->second.front());
    }
  }

  /// Drops everything.
  void clear() {
    while (!empty()) {
      auto self = take(*by_due_.begin());
    }
  }

  /// Ships the earliest timeout: what `simple_actor_clock::ship` does for a
  /// request timeout. The entry is gone before the message goes out.
  void fire_front() {
    auto id = by_due_.begin()->id;
    auto self = take(*by_due_.begin());
    self->get()->eq_impl(id, self, nullptr, caf::sec::request_timeout);
  }

  /// For tests, from any thread: how many this holds.
  size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }

private:
  using by_due_tree = bi::multiset<pending_request, bi::compare<by_due>,
                                   bi::constant_time_size<true>>;
  using index_set =
      bi::unordered_multiset<pending_request, bi::key_of_value<key_of_request>,
                             bi::hash<hash_request_key>,
                             bi::power_2_buckets<true>>;
  using actor_map = std::unordered_map<caf::actor_id, actor_requests>;

  static constexpr size_t min_buckets = 64;
  /// Recycled entries and actor map nodes kept: enough for the churn
  /// between two looks at the clock, not a pool the size of a past peak.
  static constexpr size_t max_spares = 256;
  static constexpr size_t max_spare_actor_nodes = 16;

  pending_request* make_entry() {
    if (spares_.empty()) return new pending_request;
    auto* x = &spares_.front();
    spares_.pop_front();
    return x;
  }

  /// Unlinks `x` everywhere and recycles it; returns its actor reference,
  /// for the caller to release once nothing points to `x` any more.
  caf::strong_actor_ptr take(pending_request& x) {
    by_due_.erase(by_due_.iterator_to(x));
    index_.erase(index_.iterator_to(x));
    auto* owner = x.owner;
    owner->erase(owner->iterator_to(x));
    if (owner->empty()) {
      if (owner == last_) last_ = nullptr;
      auto node = actors_.extract(x.aid);
      if (spare_actor_nodes_.size() < max_spare_actor_nodes)
        spare_actor_nodes_.push_back(std::move(node));
    }
    auto self = std::move(x.self);
    recycle(x);
    // After a peak, the buckets shrink again (by halves, well below the
    // load that grows them, so no size flips between the two). Optional:
    // without memory for the smaller array they stay as they are.
    if (buckets_.size() > min_buckets && index_.size() * 8 < buckets_.size()) {
      try {
        rehash(buckets_.size() / 2);
      } catch (...) {
      }
    }
    held_.store(size(), std::memory_order_relaxed);
    return self;
  }

  /// `x` is linked nowhere.
  void recycle(pending_request& x) {
    if (spares_.size() < max_spares)
      spares_.push_front(x);
    else
      delete &x;
  }

  /// The list of `aid`, made if need be. A caller sets its timeouts in a
  /// row: the last one found is at hand without a lookup.
  actor_requests& requests_of(caf::actor_id aid) {
    if (last_ && last_aid_ == aid) return *last_;
    auto i = actors_.find(aid);
    if (i == actors_.end()) {
      if (spare_actor_nodes_.empty()) {
        i = actors_.try_emplace(aid).first;
      } else {
        auto node = std::move(spare_actor_nodes_.back());
        spare_actor_nodes_.pop_back();
        node.key() = aid;
        i = actors_.insert(std::move(node)).position;
      }
    }
    last_aid_ = aid;
    last_ = &i->second;
    return i->second;
  }

  void rehash(size_t n) {
    std::vector<index_set::bucket_type> fresh(n);
    index_.rehash(index_set::bucket_traits(fresh.data(), fresh.size()));
    buckets_.swap(fresh);
  }

  uint64_t seq_ = 0;
  by_due_tree by_due_;
  /// Not before any deadline in `by_due_`.
  time_point latest_due_;
  std::vector<index_set::bucket_type> buckets_ =
      std::vector<index_set::bucket_type>(min_buckets);
  index_set index_{index_set::bucket_traits(buckets_.data(), buckets_.size())};
  actor_map actors_;
  caf::actor_id last_aid_ = 0;
  actor_requests* last_ = nullptr;
  std::vector<actor_map::node_type> spare_actor_nodes_;
  bi::list<pending_request> spares_;
  std::atomic<size_t> held_{0};
};

/// CAF's single-threaded clock, owned by whichever thread drives the loop.
/// On that thread every call goes straight to `simple_actor_clock`, except
/// request timeouts, which live in a `request_timeouts` of their own; other
/// threads queue the same events CAF's thread-safe clock would build, and
/// the loop applies them in the order they were made (to the same two
/// places).
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
    if (io_.on_loop_thread()) return requests_.add(t, self->ctrl(), id);
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
    if (io_.on_loop_thread()) return requests_.cancel(self->id(), id);
    push(new request_timeout_cancellation(self->id(), id));
  }

  void cancel_timeouts(caf::abstract_actor* self) override {
    if (io_.on_loop_thread()) {
      clock_base::cancel_timeouts(self);
      requests_.cancel_actor(self->id());
      return;
    }
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
    if (io_.on_loop_thread()) return drop_everything();
    push(new drop_all);
  }

  // -- the driver's side
  // -------------------------------------------------------

  /// When the loop must look at the clock again (nothing scheduled: never).
  std::optional<time_point> next_due() const {
    if (schedule_.empty()) {
      if (requests_.empty()) return std::nullopt;
      return requests_.front_due();
    }
    auto t = schedule_.begin()->first;
    if (!requests_.empty() && requests_.front_due() < t)
      return requests_.front_due();
    return t;
  }

  /// Ships every due event (each is an enqueue on the loop thread), in due
  /// order across CAF's schedule and the request timeouts; at equal times
  /// CAF's schedule goes first.
  void fire_due() {
    auto t = now();
    for (;;) {
      bool other = !schedule_.empty() && schedule_.begin()->first <= t;
      bool request = !requests_.empty() && requests_.front_due() <= t;
      if (request &&
          (!other || requests_.front_due() < schedule_.begin()->first)) {
        requests_.fire_front();
      } else if (other) {
        // One step of `trigger_expired_timeouts`.
        auto i = schedule_.begin();
        auto ev = std::move(i->second);
        if (ev->backlink != actor_lookup_.end())
          actor_lookup_.erase(ev->backlink);
        schedule_.erase(i);
        ship(*ev);
      } else {
        return;
      }
    }
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
    drop_everything();
  }

  /// How many request timeouts the loop holds (any thread; for tests).
  size_t request_timeouts_held() const noexcept { return requests_.held(); }

private:
  void drop_everything() {
    clock_base::cancel_all();
    requests_.clear();
  }

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

  // On the driver. The same dispatch as thread_safe_actor_clock's loop,
  // with request timeouts and their cancellations going where the loop
  // thread's own go, so either side cancels what either side set.
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
      case request_timeout_cancellation_type: {
        auto& c = static_cast<request_timeout_cancellation&>(*x);
        requests_.cancel(c.aid, c.id);
        break;
      }
      case timeouts_cancellation_type: {
        auto& c = static_cast<timeouts_cancellation&>(*x);
        handle(c);
        requests_.cancel_actor(c.aid);
        break;
      }
      case drop_all_type:
        drop_everything();
        break;
      case ordinary_timeout_type:
        add_schedule_entry(std::unique_ptr<ordinary_timeout>{
            static_cast<ordinary_timeout*>(x.release())});
        break;
      case multi_timeout_type:
        add_schedule_entry(std::unique_ptr<multi_timeout>{
            static_cast<multi_timeout*>(x.release())});
        break;
      case request_timeout_type: {
        auto& r = static_cast<request_timeout&>(*x);
        requests_.add(r.due, std::move(r.self), r.id);
        break;
      }
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
  request_timeouts requests_;
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
    return detail::resume_job(job, this, parent.max_throughput(),
                              [this](resumable* j) { local.push_back(j); });
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
      detail::guarded([&] { clock.fire_due(); });
      detail::guarded([&] { io->poll(); });
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
        detail::guarded([&] { io->run_one_until(*due); });
      else
        detail::guarded([&] { io->run_one(); });
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
    detail::guarded([&] { io->poll(); });
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

size_t engine_loop::request_timeouts_held() const noexcept {
  return impl_->clock.request_timeouts_held();
}

std::shared_ptr<transport::io_loop> engine_loop_io(caf::actor_system& sys) {
  if (auto* loop = dynamic_cast<engine_loop*>(&sys.scheduler()))
    return loop->io();
  return nullptr;
}

} // namespace georoute

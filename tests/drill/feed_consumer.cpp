#include "tests/drill/feed_consumer.hpp"

#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"

#include <caf/all.hpp>

namespace georoute::drill {

namespace {

// The consumer's own messages: the next read of a loop (stale once the
// generation moved on), and the drill's pause and drain.
struct feed_tick {
  uint64_t generation = 0;
};
struct feed_pause {};
struct feed_drain {
  std::chrono::milliseconds settle{0};
};

} // namespace

} // namespace georoute::drill

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::feed_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::feed_pause)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::feed_drain)

namespace georoute::drill {

namespace {

using clock = std::chrono::steady_clock;

enum class consumer_mode { running, pausing, paused, draining, drained };

struct consumer_state {
  feed_consumer_setup cfg;
  consumer_mode mode = consumer_mode::running;
  size_t site = 0; ///< the site whose engine it reads through now
  size_t elsewhere_next = 0;
  /// Bumped whenever a loop is abandoned: its pending tick is then stale.
  uint64_t generation = 0;
  bool in_flight = false;
  clock::time_point last_restart;
  caf::response_promise paused;
  caf::response_promise drained;
  clock::time_point settled_from;
  int caught_up_in_a_row = 0;
  static inline const char* name = "georoute.drill.feed_consumer";
};

using consumer_ptr = caf::stateful_actor<consumer_state>*;

std::string error_text(const caf::error& e) {
  std::string text =
      e.category() == error_category
          ? std::string{to_string(code_of(e))} + ": " + context_of(e)
          : "caf: " + caf::to_string(e);
  return text.substr(0, 300);
}

void read(consumer_ptr self);

void schedule(consumer_ptr self, std::chrono::milliseconds after) {
  self->delayed_send(self, after, feed_tick{self->state.generation});
}

// A process that was killed and started again: all it kept is its
// checkpoint. Every `elsewhere_every`-th time it comes back on another site.
void restart(consumer_ptr self) {
  auto& st = self->state;
  ++st.generation;
  st.last_restart = clock::now();
  uint64_t n = 0;
  {
    std::lock_guard<std::mutex> guard{st.cfg.log->mtx};
    n = ++st.cfg.log->restarts;
    if (st.cfg.sites.size() > 1 && st.cfg.elsewhere_every > 0 &&
        n % st.cfg.elsewhere_every == 0)
      ++st.cfg.log->restarts_elsewhere;
  }
  st.site = st.cfg.home;
  if (st.cfg.sites.size() > 1 && st.cfg.elsewhere_every > 0 &&
      n % st.cfg.elsewhere_every == 0) {
    // The other sites in turn.
    do
      st.site = st.elsewhere_next++ % st.cfg.sites.size();
    while (st.site == st.cfg.home);
  }
}

// A restart comes by the clock, whether pages succeed or fail; not while
// the drill pauses or drains the consumer.
bool restart_due(const consumer_state& st) {
  return st.mode == consumer_mode::running &&
         clock::now() - st.last_restart >= st.cfg.restart_every;
}

void on_page(consumer_ptr self, change_feed_page& page,
             clock::time_point sent) {
  auto& st = self->state;
  st.in_flight = false;
  auto& log = *st.cfg.log;
  bool restarting = restart_due(st);
  // Every other restart drops the page that just came back: it was never
  // applied, so the checkpoint still points before it.
  bool discard = false;
  if (restarting) {
    std::lock_guard<std::mutex> guard{log.mtx};
    discard = log.restarts % 2 == 0;
    if (discard) ++log.pages_discarded;
  }
  if (!discard) {
    std::lock_guard<std::mutex> guard{log.mtx};
    log.ledger.apply_page(page.documents);
    log.checkpoint = page.continuation;
    // With hedging the last attempt listed may be a losing arm.
    const attempt_record* by = nullptr;
    for (const auto& a : page.diag.attempts)
      if (a.winner || by == nullptr || !by->winner) by = &a;
    if (by != nullptr)
      ++log.served_by[by->region.empty() ? by->endpoint : by->region];
    log.ranges = page.ranges;
  }
  if (restarting) {
    restart(self);
    read(self);
    return;
  }
  if (!page.caught_up) {
    st.caught_up_in_a_row = 0;
    read(self);
    return;
  }
  if (st.mode == consumer_mode::draining) {
    if (sent >= st.settled_from) ++st.caught_up_in_a_row;
    if (st.caught_up_in_a_row >= 2) {
      st.mode = consumer_mode::drained;
      ++st.generation;
      st.drained.deliver(true);
      return;
    }
  }
  schedule(self, st.cfg.idle);
}

void on_failure(consumer_ptr self, const caf::error& e) {
  auto& st = self->state;
  st.in_flight = false;
  st.caught_up_in_a_row = 0;
  {
    std::lock_guard<std::mutex> guard{st.cfg.log->mtx};
    auto& log = *st.cfg.log;
    ++log.failed_pages;
    if (e == caf::sec::request_timeout) ++log.timed_out_pages;
    log.last_error = error_text(e);
    if (log.first_error.empty()) log.first_error = log.last_error;
  }
  // Nothing was applied: the same continuation again, after a pause (from
  // the checkpoint, on whichever site, when a restart is due meanwhile).
  if (restart_due(st)) restart(self);
  schedule(self, st.cfg.retry_pause);
}

void read(consumer_ptr self) {
  auto& st = self->state;
  switch (st.mode) {
  case consumer_mode::pausing:
    st.mode = consumer_mode::paused;
    ++st.generation;
    st.paused.deliver(true);
    return;
  case consumer_mode::paused:
  case consumer_mode::drained:
    return;
  case consumer_mode::running:
  case consumer_mode::draining:
    break;
  }
  change_feed_request req;
  req.collection_link = st.cfg.collection_link;
  req.start = feed_start::beginning;
  req.max_item_count = st.cfg.page_size;
  req.options.excluded_regions = st.cfg.excluded_regions;
  // The consumer knows its timeout: the engine starts no attempt after it.
  req.options.budget = st.cfg.deadline;
  {
    std::lock_guard<std::mutex> guard{st.cfg.log->mtx};
    req.continuation = st.cfg.log->checkpoint;
  }
  auto sent = clock::now();
  auto generation = st.generation;
  st.in_flight = true;
  self->request(st.cfg.sites.at(st.site)(), st.cfg.deadline, route_atom_v,
                std::move(req))
      .then(
          [self, sent, generation](change_feed_page& page) {
            if (generation != self->state.generation) return;
            on_page(self, page, sent);
          },
          [self, generation](caf::error& e) {
            if (generation != self->state.generation) return;
            on_failure(self, e);
          });
}

caf::behavior feed_consumer(consumer_ptr self, feed_consumer_setup setup) {
  auto& st = self->state;
  st.cfg = std::move(setup);
  st.site = st.cfg.home;
  st.last_restart = clock::now();
  read(self);
  return {
      [self](feed_tick t) {
        if (t.generation != self->state.generation || self->state.in_flight)
          return;
        read(self);
      },
      [self](feed_pause) -> caf::result<bool> {
        auto& st = self->state;
        if (st.mode == consumer_mode::paused) return true;
        if (!st.in_flight) {
          // Only a tick was pending: it is stale from now on.
          st.mode = consumer_mode::paused;
          ++st.generation;
          return true;
        }
        st.mode = consumer_mode::pausing;
        st.paused = self->make_response_promise();
        return st.paused;
      },
      [self](feed_drain d) -> caf::result<bool> {
        auto& st = self->state;
        st.mode = consumer_mode::draining;
        st.settled_from = clock::now() + d.settle;
        st.caught_up_in_a_row = 0;
        st.drained = self->make_response_promise();
        if (!st.in_flight) {
          ++st.generation;
          read(self);
        }
        return st.drained;
      },
  };
}

bool ask_bool(caf::actor_system& sys, const caf::actor& consumer,
              std::chrono::milliseconds timeout, caf::message msg) {
  caf::scoped_actor self{sys};
  bool answer = false;
  self->request(consumer, timeout, std::move(msg))
      .receive([&](bool b) { answer = b; }, [&](caf::error&) {});
  return answer;
}

} // namespace

caf::actor spawn_feed_consumer(caf::actor_system& sys,
                               feed_consumer_setup setup) {
  return sys.spawn(feed_consumer, std::move(setup));
}

bool pause_feed_consumer(caf::actor_system& sys, const caf::actor& consumer,
                         std::chrono::milliseconds timeout) {
  return ask_bool(sys, consumer, timeout, caf::make_message(feed_pause{}));
}

bool drain_feed_consumer(caf::actor_system& sys, const caf::actor& consumer,
                         std::chrono::milliseconds settle,
                         std::chrono::milliseconds timeout) {
  return ask_bool(sys, consumer, timeout,
                  caf::make_message(feed_drain{settle}));
}

} // namespace georoute::drill

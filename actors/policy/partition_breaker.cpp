#include "georoute/actors/policy/partition_breaker.hpp"

#include <charconv>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace georoute {

namespace {

using std::chrono::milliseconds;

std::string ms_text(milliseconds x) {
  return std::to_string(x.count()) + " ms";
}

} // namespace

// -- which outcomes count ----------------------------------------------------

breaker_signal breaker_signal_of(int status, int substatus,
                                 transport_failure_kind kind,
                                 bool may_have_sent) {
  if (kind != transport_failure_kind::none)
    return may_have_sent ? breaker_signal::failure : breaker_signal::no_signal;
  if (status < 100) return breaker_signal::no_signal;
  switch (status) {
  case 500:
  case 502:
  case 503:
  case 504:
    return breaker_signal::failure;
  case 408:
    return substatus == 21013 ? breaker_signal::answered
                              : breaker_signal::failure;
  default:
    return breaker_signal::answered;
  }
}

bool breaker_counts(int status, int substatus, transport_failure_kind kind,
                    bool may_have_sent) {
  return breaker_signal_of(status, substatus, kind, may_have_sent) ==
         breaker_signal::failure;
}

// -- options -----------------------------------------------------------------

std::optional<problem> partition_breaker_options::validate() const {
  // Upper bounds keep `time + period` far from overflow; nobody needs more.
  constexpr milliseconds max_period{std::chrono::hours{24}};
  constexpr milliseconds max_probe{std::chrono::hours{1}};
  auto bad = [](std::string what) { return problem{std::move(what)}; };
  if (read_failure_threshold == 0)
    return bad("read_failure_threshold: must be at least 1, got 0");
  if (write_failure_threshold == 0)
    return bad("write_failure_threshold: must be at least 1, got 0");
  if (hedge_win_threshold == 0)
    return bad("hedge_win_threshold: must be at least 1, got 0 (to ignore "
               "hedge wins, do not report them)");
  if (open_period <= milliseconds{0})
    return bad("open_period: must be positive, got " + ms_text(open_period));
  if (max_open_period < open_period)
    return bad("max_open_period: " + ms_text(max_open_period) +
               " is below open_period (" + ms_text(open_period) + ")");
  if (max_open_period > max_period)
    return bad("max_open_period: at most 24 h, got " +
               ms_text(max_open_period));
  if (probe_timeout <= milliseconds{0})
    return bad("probe_timeout: must be positive, got " +
               ms_text(probe_timeout));
  if (probe_timeout > max_probe)
    return bad("probe_timeout: at most 1 h, got " + ms_text(probe_timeout));
  if (half_open_steps > 16)
    return bad("half_open_steps: at most 16, got " +
               std::to_string(half_open_steps));
  if (capacity == 0) return bad("capacity: must be at least 1, got 0");
  if (transition_log_capacity == 0)
    return bad("transition_log_capacity: must be at least 1, got 0");
  return std::nullopt;
}

// -- vocabulary --------------------------------------------------------------

const char* to_string(breaker_state x) {
  static constexpr const char* names[] = {"closed", "open", "probing",
                                          "half_open"};
  auto i = static_cast<std::size_t>(x);
  return i < std::size(names) ? names[i] : "?";
}

const char* to_string(breaker_reason x) {
  static constexpr const char* names[] = {
      "read_failures",     "write_failures",      "hedge_wins",
      "probe_started",     "probe_answered",      "probe_failed",
      "probe_timed_out",   "probe_lost_to_hedge", "probe_not_sent",
      "half_open_failure", "recovered",           "evicted",
      "forgotten"};
  auto i = static_cast<std::size_t>(x);
  return i < std::size(names) ? names[i] : "?";
}

// -- the breaker: construction and bookkeeping -------------------------------

partition_breaker::partition_breaker(partition_breaker_options options)
    : options_(std::move(options)) {
  if (auto p = options_.validate())
    throw std::invalid_argument("partition_breaker: " + p->what);
}

const std::string& partition_breaker::index_key(const breaker_key& key) const {
  // Length prefixes make the concatenation unambiguous for any spelling.
  // This runs for every breaker-checked attempt: the buffer is reused.
  auto& k = key_buf_;
  k.clear();
  auto size_prefix = [&](size_t n) {
    char digits[20];
    auto r = std::to_chars(digits, digits + sizeof(digits), n);
    k.append(digits, r.ptr);
    k += ':';
  };
  size_prefix(key.collection_rid.size());
  k += key.collection_rid;
  size_prefix(key.range_id.size());
  k += key.range_id;
  for (char c : key.region)
    k += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return k;
}

partition_breaker::slot* partition_breaker::find(const breaker_key& key) {
  auto i = index_.find(index_key(key));
  return i == index_.end() ? nullptr : &i->second;
}

const partition_breaker::entry*
partition_breaker::find(const breaker_key& key) const {
  auto i = index_.find(index_key(key));
  return i == index_.end() ? nullptr : &*i->second.it;
}

partition_breaker::slot& partition_breaker::insert(const breaker_key& key,
                                                   policy_time now) {
  closed_.emplace_front();
  closed_.front().key = key;
  closed_.front().period = options_.open_period;
  auto& s = index_[index_key(key)];
  s = slot{closed_.begin(), false};
  if (size() > options_.capacity) evict_one(now);
  return s;
}

void partition_breaker::evict_one(policy_time now) {
  // The newcomer is closed_.front(): never the victim.
  ++counters_.evictions;
  if (closed_.size() > 1) {
    erase(closed_.back().key);
    return;
  }
  auto& victim = tripped_.back();
  ++counters_.evicted_tripped;
  record_transition({victim.key, victim.state, breaker_state::closed,
                     breaker_reason::evicted, now});
  erase(victim.key);
}

void partition_breaker::touch(slot& s) {
  auto& list = s.tripped ? tripped_ : closed_;
  list.splice(list.begin(), list, s.it);
}

void partition_breaker::erase(const breaker_key& key) {
  auto i = index_.find(index_key(key));
  if (i == index_.end()) return;
  (i->second.tripped ? tripped_ : closed_).erase(i->second.it);
  index_.erase(i);
}

void partition_breaker::erase_if_idle(slot& s) {
  const auto& e = *s.it;
  if (e.state == breaker_state::closed && e.read_failures == 0 &&
      e.write_failures == 0 && e.hedge_wins == 0)
    erase(breaker_key{e.key});
}

void partition_breaker::place(slot& s) {
  bool tripped = s.it->state != breaker_state::closed;
  if (tripped == s.tripped) return;
  auto& from = s.tripped ? tripped_ : closed_;
  auto& to = tripped ? tripped_ : closed_;
  to.splice(to.begin(), from, s.it);
  s.tripped = tripped;
}

milliseconds partition_breaker::doubled(milliseconds p) const {
  return p >= options_.max_open_period / 2 ? options_.max_open_period : 2 * p;
}

uint32_t partition_breaker::one_in(const entry& e) const {
  return uint32_t{1} << (options_.half_open_steps - e.half_open_answers);
}

bool partition_breaker::is_current(const entry& e, breaker_ticket t) {
  return t.value == 0 || t.value >= e.state_since;
}

// -- transitions -------------------------------------------------------------

void partition_breaker::record_transition(breaker_transition t) {
  auto& c = counters_;
  if (t.to == breaker_state::open) {
    if (t.from == breaker_state::closed)
      ++c.opened;
    else if (t.reason != breaker_reason::probe_not_sent)
      ++c.reopened;
  }
  switch (t.reason) {
  case breaker_reason::probe_started:
    ++c.probes_started;
    break;
  case breaker_reason::probe_answered:
    ++c.probe_successes;
    if (t.to == breaker_state::closed) ++c.closed;
    break;
  case breaker_reason::probe_timed_out:
    ++c.probe_timeouts;
    ++c.probe_failures;
    break;
  case breaker_reason::probe_failed:
  case breaker_reason::probe_lost_to_hedge:
    ++c.probe_failures;
    break;
  case breaker_reason::probe_not_sent:
    ++c.probes_not_sent;
    break;
  case breaker_reason::recovered:
    ++c.closed;
    break;
  default:
    break;
  }
  log_.push_back(std::move(t));
  if (log_.size() > options_.transition_log_capacity) {
    log_.pop_front();
    ++c.transitions_dropped;
  }
}

breaker_transition partition_breaker::change(entry& e, breaker_state to,
                                             breaker_reason reason,
                                             policy_time at) const {
  breaker_transition t{e.key, e.state, to, reason, at};
  e.state = to;
  e.read_failures = 0;
  e.write_failures = 0;
  e.hedge_wins = 0;
  e.probe_ticket = 0;
  e.half_open_answers = 0;
  e.half_open_seen = 0;
  // Whatever was let through before this moment is stale from now on.
  e.state_since = last_ticket_ + 1;
  return t;
}

breaker_transition partition_breaker::to_open(entry& e, breaker_reason reason,
                                              policy_time at,
                                              milliseconds period) const {
  auto t = change(e, breaker_state::open, reason, at);
  e.period = period;
  e.open_until = at + period;
  return t;
}

std::optional<breaker_transition>
partition_breaker::settle(entry& e, policy_time now) const {
  if (e.state != breaker_state::probing || now < e.probe_deadline)
    return std::nullopt;
  return to_open(e, breaker_reason::probe_timed_out, e.probe_deadline,
                 doubled(e.period));
}

breaker_state partition_breaker::apply(slot& s, breaker_transition t) {
  auto to = t.to;
  record_transition(std::move(t));
  place(s);
  // A closed entry has zero counts here: it is dropped, `s` with it.
  if (to == breaker_state::closed) erase_if_idle(s);
  return to;
}

partition_breaker::slot* partition_breaker::enter(const breaker_key& key,
                                                  policy_time now) {
  auto* s = find(key);
  if (s == nullptr) return nullptr;
  if (auto t = settle(*s->it, now)) apply(*s, std::move(*t));
  touch(*s);
  return s;
}

// -- routing -----------------------------------------------------------------

breaker_admission partition_breaker::admit(const breaker_key& key,
                                           policy_time now) {
  auto* s = enter(key, now);
  if (s == nullptr) return {admission_kind::pass, {next_ticket()}};
  auto& e = *s->it;
  switch (e.state) {
  case breaker_state::closed:
    return {admission_kind::pass, {next_ticket()}};
  case breaker_state::open:
    if (now >= e.open_until) {
      auto t =
          change(e, breaker_state::probing, breaker_reason::probe_started, now);
      e.probe_ticket = next_ticket();
      e.probe_deadline = now + options_.probe_timeout;
      apply(*s, std::move(t));
      return {admission_kind::probe, {e.probe_ticket}};
    }
    break;
  case breaker_state::probing:
    break;
  case breaker_state::half_open:
    if (++e.half_open_seen >= one_in(e)) {
      e.half_open_seen = 0;
      return {admission_kind::trial, {next_ticket()}};
    }
    break;
  }
  ++counters_.blocked;
  return {admission_kind::blocked, {}};
}

std::optional<breaker_choice> partition_breaker::choose(
    std::string_view collection_rid, std::string_view range_id,
    const std::vector<std::string>& regions, policy_time now) {
  if (regions.empty()) return std::nullopt;
  breaker_key key{std::string{collection_rid}, std::string{range_id}, {}};
  for (std::size_t i = 0; i < regions.size(); ++i) {
    key.region = regions[i];
    auto a = admit(key, now);
    if (a.allowed()) return breaker_choice{i, a, i};
  }
  ++counters_.fallbacks;
  return breaker_choice{
      0, {admission_kind::fallback, {next_ticket()}}, regions.size()};
}

bool partition_breaker::blocked(const breaker_key& key, policy_time now) const {
  const auto* found = find(key);
  if (found == nullptr) return false;
  auto e = *found;
  settle(e, now);
  switch (e.state) {
  case breaker_state::closed:
    return false;
  case breaker_state::open:
    return now < e.open_until;
  case breaker_state::probing:
    return true;
  case breaker_state::half_open:
    return e.half_open_seen + 1 < one_in(e);
  }
  return true;
}

// -- outcomes ----------------------------------------------------------------

breaker_state partition_breaker::record(const breaker_key& key, op_kind op,
                                        breaker_signal signal,
                                        breaker_ticket ticket,
                                        policy_time now) {
  auto* s = enter(key, now);
  if (s == nullptr) {
    if (signal != breaker_signal::failure) return breaker_state::closed;
    s = &insert(key, now);
  }
  auto& e = *s->it;
  switch (signal) {
  case breaker_signal::failure:
    return on_failure(*s, op, ticket, now);
  case breaker_signal::answered:
    return on_answered(*s, op, ticket, now);
  case breaker_signal::no_signal:
    if (e.state == breaker_state::probing && ticket.value != 0 &&
        ticket.value == e.probe_ticket)
      return apply(*s,
                   to_open(e, breaker_reason::probe_not_sent, now, e.period));
    return e.state;
  }
  return e.state;
}

breaker_state partition_breaker::on_failure(slot& s, op_kind op,
                                            breaker_ticket ticket,
                                            policy_time now) {
  auto& e = *s.it;
  switch (e.state) {
  case breaker_state::closed: {
    bool read = op == op_kind::read;
    auto n = read ? ++e.read_failures : ++e.write_failures;
    if (n < (read ? options_.read_failure_threshold
                  : options_.write_failure_threshold))
      return e.state;
    auto why =
        read ? breaker_reason::read_failures : breaker_reason::write_failures;
    return apply(s, to_open(e, why, now, options_.open_period));
  }
  case breaker_state::probing:
    if (ticket.value != 0 && ticket.value == e.probe_ticket)
      return apply(
          s, to_open(e, breaker_reason::probe_failed, now, doubled(e.period)));
    break;
  case breaker_state::half_open:
    if (is_current(e, ticket))
      return apply(s, to_open(e, breaker_reason::half_open_failure, now,
                              doubled(e.period)));
    break;
  case breaker_state::open:
    break;
  }
  ++counters_.stale_outcomes;
  return e.state;
}

breaker_state partition_breaker::on_answered(slot& s, op_kind op,
                                             breaker_ticket ticket,
                                             policy_time now) {
  auto& e = *s.it;
  switch (e.state) {
  case breaker_state::closed:
    (op == op_kind::read ? e.read_failures : e.write_failures) = 0;
    erase_if_idle(s);
    return breaker_state::closed;
  case breaker_state::probing:
    if (ticket.value != 0 && ticket.value == e.probe_ticket) {
      auto to = options_.half_open_steps == 0 ? breaker_state::closed
                                              : breaker_state::half_open;
      return apply(s, change(e, to, breaker_reason::probe_answered, now));
    }
    break;
  case breaker_state::half_open:
    if (is_current(e, ticket)) {
      if (++e.half_open_answers < options_.half_open_steps) return e.state;
      return apply(
          s, change(e, breaker_state::closed, breaker_reason::recovered, now));
    }
    break;
  case breaker_state::open:
    break;
  }
  ++counters_.stale_outcomes;
  return e.state;
}

breaker_state partition_breaker::record_hedge_win(const breaker_key& loser,
                                                  breaker_ticket ticket,
                                                  policy_time now) {
  auto* s = enter(loser, now);
  if (s == nullptr) s = &insert(loser, now);
  auto& e = *s->it;
  switch (e.state) {
  case breaker_state::closed:
    if (++e.hedge_wins < options_.hedge_win_threshold) return e.state;
    return apply(
        *s, to_open(e, breaker_reason::hedge_wins, now, options_.open_period));
  case breaker_state::probing:
    if (ticket.value != 0 && ticket.value == e.probe_ticket)
      return apply(*s, to_open(e, breaker_reason::probe_lost_to_hedge, now,
                               doubled(e.period)));
    break;
  case breaker_state::half_open:
    if (is_current(e, ticket)) {
      if (++e.hedge_wins < options_.hedge_win_threshold) return e.state;
      return apply(
          *s, to_open(e, breaker_reason::hedge_wins, now, doubled(e.period)));
    }
    break;
  case breaker_state::open:
    break;
  }
  ++counters_.stale_outcomes;
  return e.state;
}

void partition_breaker::record_primary_final(const breaker_key& key,
                                             policy_time now) {
  auto* s = enter(key, now);
  if (s == nullptr) return;
  auto& e = *s->it;
  if (e.state != breaker_state::closed && e.state != breaker_state::half_open)
    return;
  e.hedge_wins = 0;
  erase_if_idle(*s);
}

// -- housekeeping and observation --------------------------------------------

std::size_t partition_breaker::forget_range(std::string_view collection_rid,
                                            std::string_view range_id,
                                            policy_time now) {
  std::vector<breaker_key> doomed;
  for (auto* list : {&closed_, &tripped_})
    for (const auto& e : *list)
      if (e.key.collection_rid == collection_rid && e.key.range_id == range_id)
        doomed.push_back(e.key);
  for (const auto& key : doomed) {
    auto state = find(key)->it->state;
    if (state != breaker_state::closed)
      record_transition(
          {key, state, breaker_state::closed, breaker_reason::forgotten, now});
    erase(key);
  }
  counters_.forgotten += doomed.size();
  return doomed.size();
}

breaker_view partition_breaker::view(const breaker_key& key,
                                     policy_time now) const {
  breaker_view v;
  v.open_period = options_.open_period;
  const auto* found = find(key);
  if (found == nullptr) return v;
  auto e = *found;
  settle(e, now);
  v.tracked = true;
  v.state = e.state;
  v.read_failures = e.read_failures;
  v.write_failures = e.write_failures;
  v.hedge_wins = e.hedge_wins;
  v.open_period = e.period;
  v.open_until = e.open_until;
  v.probe_deadline = e.probe_deadline;
  if (e.state == breaker_state::half_open) v.one_in = one_in(e);
  return v;
}

std::vector<breaker_transition> partition_breaker::drain_transitions() {
  std::vector<breaker_transition> out(std::make_move_iterator(log_.begin()),
                                      std::make_move_iterator(log_.end()));
  log_.clear();
  return out;
}

} // namespace georoute

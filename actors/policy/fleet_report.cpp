#include "georoute/actors/policy/fleet_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace georoute {

using std::chrono::milliseconds;

std::string fleet_payload(const fleet_claim& c) {
  nlohmann::json ev = {{"to", c.evidence.threshold_waits},
                       {"er", c.evidence.errors},
                       {"ok", c.evidence.successes},
                       {"oko", c.evidence.successes_other},
                       {"win", c.evidence.window_ms}};
  nlohmann::json j = {
      {"v", 1},
      {"ep", c.epoch},
      {"sq", c.seq},
      {"ts", c.ts_ms},
      {"st", c.state == fleet_claim_state::down ? "down" : "up"},
      {"sc", c.op_class == fleet_claim_class::read ? "read" : "write"},
      {"ev", std::move(ev)},
      {"lh", c.local_health},
      {"ttl", c.ttl.count()}};
  if (!c.partition.empty()) j["pk"] = c.partition;
  return j.dump();
}

std::optional<problem> fleet_report_options::validate() const {
  auto positive = [](milliseconds d,
                     const char* name) -> std::optional<problem> {
    if (d <= milliseconds{0} || d > std::chrono::hours{1})
      return problem{std::string{name} + ": must be in (0, 1 h], got " +
                     std::to_string(d.count()) + " ms"};
    return std::nullopt;
  };
  if (auto p = positive(window, "window")) return p;
  if (min_threshold_waits == 0)
    return problem{"min_threshold_waits: must be at least 1, got 0"};
  if (auto p = positive(refresh, "refresh")) return p;
  if (auto p = positive(ttl, "ttl")) return p;
  if (refresh >= ttl)
    return problem{"refresh: must be below ttl, or a held claim lapses "
                   "between two reports"};
  if (auto p = positive(region_spacing, "region_spacing")) return p;
  if (max_per_second == 0)
    return problem{"max_per_second: must be at least 1, got 0"};
  if (auto p = positive(late_by, "late_by")) return p;
  if (max_health_score > 7)
    return problem{"max_health_score: at most 7, got " +
                   std::to_string(max_health_score)};
  if (max_events == 0) return problem{"max_events: must be at least 1, got 0"};
  return std::nullopt;
}

fleet_reporter::fleet_reporter(std::string epoch, fleet_report_options options)
    : epoch_(std::move(epoch)), options_(std::move(options)) {
  if (auto p = options_.validate())
    throw std::invalid_argument("fleet_reporter: " + p->what);
  if (!is_fleet_epoch(epoch_))
    throw std::invalid_argument("fleet_reporter: epoch must be 16 hex digits");
}

void fleet_reporter::prune(region_state& r, clock::time_point now) {
  while (!r.events.empty() && now - r.events.front().first > options_.window)
    r.events.pop_front();
}

void fleet_reporter::observe(std::string_view region, fleet_event e,
                             clock::time_point now) {
  auto& r = regions_[fleet_region_key(region)];
  if (r.name.empty()) r.name = std::string{region};
  r.events.emplace_back(now, e);
  while (r.events.size() > options_.max_events)
    r.events.pop_front();
}

void fleet_reporter::timer_fired(clock::time_point due, clock::time_point now) {
  if (now - due <= options_.late_by) return;
  health_ = static_cast<uint8_t>(std::min(7, health_ + 1));
  last_bad_ = now;
}

void fleet_reporter::probe_succeeded(std::string_view region,
                                     clock::time_point now) {
  // The probe is newer than the evidence against the region: that evidence
  // goes, so the region stops qualifying until it fails again.
  auto& r = regions_[fleet_region_key(region)];
  r.events.erase(std::remove_if(r.events.begin(), r.events.end(),
                                [](const auto& ev) {
                                  return ev.second != fleet_event::success;
                                }),
                 r.events.end());
  observe(region, fleet_event::success, now);
  if (r.claiming) r.up_due = true;
}

fleet_reporter::window_counts
fleet_reporter::counts(const region_state& r) const {
  window_counts out;
  bool definite = false; // the breaker opened, or a connection was refused
  // `due` pruned the events to the window before asking.
  for (const auto& [at, e] : r.events) {
    switch (e) {
    case fleet_event::threshold_wait:
      ++out.evidence.threshold_waits;
      break;
    case fleet_event::breaker_opened:
    case fleet_event::marked:
      definite = true;
      break;
    case fleet_event::refused:
      definite = true;
      ++out.evidence.errors;
      break;
    case fleet_event::error:
      ++out.evidence.errors;
      break;
    case fleet_event::success:
      ++out.evidence.successes;
      break;
    }
  }
  out.evidence.window_ms = static_cast<uint32_t>(options_.window.count());
  out.qualifies =
      definite || out.evidence.threshold_waits >= options_.min_threshold_waits;
  return out;
}

void fleet_reporter::age_health(clock::time_point now) {
  if (health_ == 0) return;
  auto clean_since = [&](const std::optional<clock::time_point>& t) {
    return !t || now - *t >= options_.window;
  };
  if (clean_since(last_bad_) && clean_since(last_step_down_)) {
    --health_;
    last_step_down_ = now;
  }
}

bool fleet_reporter::rate_allows(region_state& r, clock::time_point now,
                                 bool answers_ask) {
  // An answer to a peer's ask is not held by the region's spacing: the asks
  // are rate-limited per asker on arrival (fleet_health::asked), and the
  // process's own cap below still holds.
  if (!answers_ask && r.last_sent &&
      now - *r.last_sent < options_.region_spacing)
    return false;
  while (!sent_times_.empty() &&
         now - sent_times_.front() >= std::chrono::seconds{1})
    sent_times_.pop_front();
  return sent_times_.size() < options_.max_per_second;
}

fleet_claim fleet_reporter::claim(fleet_claim_state st,
                                  const fleet_evidence& ev, int64_t wall_ms) {
  fleet_claim c;
  c.epoch = epoch_;
  c.seq = ++seq_;
  c.ts_ms = wall_ms;
  c.state = st;
  c.op_class = fleet_claim_class::read;
  c.evidence = ev;
  c.local_health = health_;
  c.ttl = options_.ttl;
  return c;
}

std::vector<fleet_outgoing>
fleet_reporter::due(clock::time_point now, int64_t wall_ms, bool connected) {
  age_health(now);
  std::map<std::string, window_counts> seen;
  uint32_t successes = 0;
  for (auto& [key, r] : regions_) {
    prune(r, now);
    auto c = counts(r);
    successes += c.evidence.successes;
    seen.emplace(key, c);
  }
  // Differential evidence: progress elsewhere. Only regions with it count
  // as qualifying, for the claim and for "everything fails".
  std::vector<std::string> qualifying;
  for (auto& [key, c] : seen) {
    c.evidence.successes_other = successes - c.evidence.successes;
    if (c.qualifies && c.evidence.successes_other > 0)
      qualifying.push_back(key);
  }
  if (qualifying.size() >= 2) {
    ++counters_.withheld_many;
    last_bad_ = now;
    if (!multi_counted_at_ || now - *multi_counted_at_ >= options_.window) {
      health_ = static_cast<uint8_t>(std::min(7, health_ + 1));
      multi_counted_at_ = now;
    }
  }
  std::vector<fleet_outgoing> out;
  for (auto& [key, r] : regions_) {
    const auto& c = seen.at(key);
    bool qualifies = qualifying.size() == 1 && qualifying.front() == key;
    bool healthy = health_ <= options_.max_health_score;
    if (qualifies && !healthy) ++counters_.withheld_unhealthy;
    std::optional<fleet_claim_state> send;
    if (qualifies && healthy &&
        (!r.claiming || r.resend || !r.last_sent ||
         now - *r.last_sent >= options_.refresh))
      send = fleet_claim_state::down;
    else if (r.up_due && !qualifies)
      send = fleet_claim_state::up;
    if (!send) continue;
    if (!connected) {
      ++counters_.dropped_disconnected;
      continue;
    }
    bool answers_ask = r.resend && *send == fleet_claim_state::down;
    if (!rate_allows(r, now, answers_ask)) {
      ++counters_.held_by_rate;
      continue;
    }
    out.push_back({r.name, claim(*send, c.evidence, wall_ms)});
    r.last_sent = now;
    sent_times_.push_back(now);
    ++counters_.sent;
    r.claiming = *send == fleet_claim_state::down;
    r.up_due = false;
    r.resend = false;
  }
  return out;
}

void fleet_reporter::resend_claims() {
  for (auto& [key, r] : regions_)
    if (r.claiming) r.resend = true;
}

std::vector<std::string> fleet_reporter::claimed() const {
  std::vector<std::string> out;
  for (const auto& [key, r] : regions_)
    if (r.claiming) out.push_back(r.name);
  return out;
}

} // namespace georoute

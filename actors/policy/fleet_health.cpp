#include "georoute/actors/policy/fleet_health.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace georoute {

using std::chrono::milliseconds;

bool is_fleet_epoch(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                  (c >= 'A' && c <= 'F');
         });
}

std::string fleet_region_key(std::string_view region) {
  std::string k{region};
  for (auto& c : k)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return k;
}

// -- parsing ------------------------------------------------------------------

result<fleet_claim> parse_fleet_claim(std::string_view payload) {
  using json = nlohmann::json;
  if (payload.size() > max_fleet_payload)
    return problem{"payload: " + std::to_string(payload.size()) +
                   " bytes, at most " + std::to_string(max_fleet_payload)};
  auto doc = json::parse(payload.begin(), payload.end(), nullptr, false);
  if (doc.is_discarded()) return problem{"payload: not JSON"};
  if (!doc.is_object()) return problem{"payload: not a JSON object"};
  auto field = [&](const json& obj, const char* name) -> const json* {
    auto it = obj.find(name);
    return it == obj.end() ? nullptr : &*it;
  };
  // An unsigned integer no larger than `max`; `where` names it.
  auto unsigned_of = [&](const json* v, const std::string& where,
                         uint64_t max) -> result<uint64_t> {
    if (v == nullptr) return problem{where + ": missing"};
    if (!v->is_number_unsigned())
      return problem{where + ": expected an unsigned integer"};
    auto x = v->get<uint64_t>();
    if (x > max)
      return problem{where + ": " + std::to_string(x) + " is above " +
                     std::to_string(max)};
    return x;
  };
  auto version = field(doc, "v");
  if (version == nullptr) return problem{"v: missing"};
  if (!version->is_number_integer()) return problem{"v: expected an integer"};
  if (version->get<int64_t>() != 1)
    return problem{"v: unknown version " + version->dump()};

  fleet_claim c;
  auto ep = field(doc, "ep");
  if (ep == nullptr || !ep->is_string() ||
      !is_fleet_epoch(ep->get<std::string>()))
    return problem{"ep: expected 16 hex digits"};
  c.epoch = ep->get<std::string>();
  auto sq =
      unsigned_of(field(doc, "sq"), "sq", std::numeric_limits<uint64_t>::max());
  if (!sq) return sq.error();
  c.seq = *sq;
  auto ts = field(doc, "ts");
  if (ts == nullptr || !ts->is_number_integer())
    return problem{"ts: expected an integer (ms since the epoch)"};
  c.ts_ms = ts->get<int64_t>();
  auto st = field(doc, "st");
  if (st == nullptr || !st->is_string() || (*st != "down" && *st != "up"))
    return problem{"st: expected \"down\" or \"up\""};
  c.state = *st == "down" ? fleet_claim_state::down : fleet_claim_state::up;
  auto sc = field(doc, "sc");
  if (sc == nullptr || !sc->is_string() || (*sc != "read" && *sc != "write"))
    return problem{"sc: expected \"read\" or \"write\""};
  c.op_class =
      *sc == "read" ? fleet_claim_class::read : fleet_claim_class::write;
  if (auto pk = field(doc, "pk")) {
    if (!pk->is_string()) return problem{"pk: expected a string"};
    c.partition = pk->get<std::string>();
    auto slash = c.partition.find('/');
    if (slash == std::string::npos || slash == 0 ||
        slash + 1 == c.partition.size())
      return problem{"pk: expected \"<collection rid>/<range id>\""};
  }
  if (auto ev = field(doc, "ev")) {
    if (!ev->is_object()) return problem{"ev: expected an object"};
    constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
    struct {
      const char* name;
      uint32_t fleet_evidence::*field;
    } const counts[] = {{"to", &fleet_evidence::threshold_waits},
                        {"er", &fleet_evidence::errors},
                        {"ok", &fleet_evidence::successes},
                        {"oko", &fleet_evidence::successes_other},
                        {"win", &fleet_evidence::window_ms}};
    for (const auto& f : counts)
      if (auto v = field(*ev, f.name)) {
        auto x = unsigned_of(v, std::string{"ev."} + f.name, u32);
        if (!x) return x.error();
        c.evidence.*f.field = static_cast<uint32_t>(*x);
      }
  }
  auto lh = unsigned_of(field(doc, "lh"), "lh", 7);
  if (!lh) return lh.error();
  c.local_health = static_cast<uint8_t>(*lh);
  // A day is far beyond any cap a receiver applies.
  auto ttl = unsigned_of(field(doc, "ttl"), "ttl", 86'400'000);
  if (!ttl) return ttl.error();
  if (*ttl == 0) return problem{"ttl: must be positive, got 0"};
  c.ttl = milliseconds{static_cast<int64_t>(*ttl)};
  return c;
}

// -- options ------------------------------------------------------------------

std::optional<problem> fleet_health_options::validate() const {
  auto ms_text = [](milliseconds d) {
    return std::to_string(d.count()) + " ms";
  };
  constexpr milliseconds hour{std::chrono::hours{1}};
  if (min_reporters == 0)
    return problem{"min_reporters: must be at least 1, got 0"};
  if (max_claim_ttl <= milliseconds{0} || max_claim_ttl > hour)
    return problem{"max_claim_ttl: must be in (0, 1 h], got " +
                   ms_text(max_claim_ttl)};
  if (max_clock_skew <= milliseconds{0} || max_clock_skew > hour)
    return problem{"max_clock_skew: must be in (0, 1 h], got " +
                   ms_text(max_clock_skew)};
  if (!(reports_per_second > 0) || !std::isfinite(reports_per_second))
    return problem{"reports_per_second: must be positive"};
  if (report_burst == 0)
    return problem{"report_burst: must be at least 1, got 0"};
  if (flood_penalty < milliseconds{0} || flood_penalty > hour)
    return problem{"flood_penalty: must be in [0, 1 h], got " +
                   ms_text(flood_penalty)};
  if (unhealthy_score == 0 || unhealthy_score > 8)
    return problem{"unhealthy_score: must be 1..8 (8: never), got " +
                   std::to_string(unhealthy_score)};
  if (local_veto < milliseconds{0} || local_veto > hour)
    return problem{"local_veto: must be in [0, 1 h], got " +
                   ms_text(local_veto)};
  if (min_hold < milliseconds{0} || min_hold > hour)
    return problem{"min_hold: must be in [0, 1 h], got " + ms_text(min_hold)};
  if (max_reporters == 0)
    return problem{"max_reporters: must be at least 1, got 0"};
  return std::nullopt;
}

std::string_view to_string(fleet_drop d) {
  switch (d) {
  case fleet_drop::accepted:
    return "accepted";
  case fleet_drop::malformed:
    return "malformed";
  case fleet_drop::clock_skew:
    return "clock_skew";
  case fleet_drop::replayed:
    return "replayed";
  case fleet_drop::flooded:
    return "flooded";
  case fleet_drop::too_many_reporters:
    return "too_many_reporters";
  }
  return "unknown";
}

// -- the receiver -------------------------------------------------------------

fleet_health::fleet_health(fleet_health_options options)
    : options_(std::move(options)) {
  if (auto p = options_.validate())
    throw std::invalid_argument("fleet_health: " + p->what);
}

fleet_drop fleet_health::take_token(std::string_view id, clock::time_point now,
                                    reporter** out) {
  auto it = reporters_.find(id);
  if (it == reporters_.end()) {
    if (reporters_.size() >= options_.max_reporters) forget_idle(now);
    if (reporters_.size() >= options_.max_reporters)
      return fleet_drop::too_many_reporters;
    it = reporters_.emplace(std::string{id}, reporter{}).first;
    it->second.tokens = options_.report_burst;
    it->second.refilled = now;
  }
  auto& r = it->second;
  r.last_heard = now;
  *out = &r;
  if (now < r.ignored_until) return fleet_drop::flooded;
  auto elapsed = std::chrono::duration<double>(now - r.refilled).count();
  r.tokens = std::min<double>(options_.report_burst,
                              r.tokens + elapsed * options_.reports_per_second);
  r.refilled = now;
  if (r.tokens < 1.0) {
    // Past the bucket: ignored for the penalty, its votes withdrawn.
    r.ignored_until = now + options_.flood_penalty;
    r.regions.clear();
    return fleet_drop::flooded;
  }
  r.tokens -= 1.0;
  return fleet_drop::accepted;
}

void fleet_health::malformed(std::string_view reporter_id,
                             clock::time_point now) {
  ++counters_.dropped_malformed;
  reporter* r = nullptr;
  take_token(reporter_id, now, &r);
}

bool fleet_health::asked(std::string_view reporter_id, clock::time_point now) {
  reporter* r = nullptr;
  auto drop = take_token(reporter_id, now, &r);
  if (drop == fleet_drop::flooded)
    ++counters_.dropped_flooded;
  else if (drop == fleet_drop::too_many_reporters)
    ++counters_.dropped_too_many_reporters;
  else
    ++counters_.asks;
  return drop == fleet_drop::accepted;
}

fleet_drop fleet_health::receive(std::string_view reporter_id,
                                 std::string_view region,
                                 const fleet_claim& claim,
                                 clock::time_point now, int64_t wall_ms) {
  reporter* r = nullptr;
  auto drop = take_token(reporter_id, now, &r);
  auto counted = [&](fleet_drop d) {
    switch (d) {
    case fleet_drop::accepted:
      ++counters_.accepted;
      break;
    case fleet_drop::malformed:
      ++counters_.dropped_malformed;
      break;
    case fleet_drop::clock_skew:
      ++counters_.dropped_clock_skew;
      break;
    case fleet_drop::replayed:
      ++counters_.dropped_replayed;
      break;
    case fleet_drop::flooded:
      ++counters_.dropped_flooded;
      break;
    case fleet_drop::too_many_reporters:
      ++counters_.dropped_too_many_reporters;
      break;
    }
    return d;
  };
  if (drop != fleet_drop::accepted) return counted(drop);
  auto skew =
      claim.ts_ms > wall_ms ? claim.ts_ms - wall_ms : wall_ms - claim.ts_ms;
  if (skew > options_.max_clock_skew.count())
    return counted(fleet_drop::clock_skew);
  if (r->seen) {
    // Within an epoch the sequence only rises; an older epoch (a restarted
    // reporter's previous life) is told by its clock.
    bool same_epoch = claim.epoch == r->epoch;
    if ((same_epoch && claim.seq <= r->seq) ||
        (!same_epoch && claim.ts_ms < r->ts_ms))
      return counted(fleet_drop::replayed);
  }
  r->seen = true;
  r->epoch = claim.epoch;
  r->seq = claim.seq;
  r->ts_ms = claim.ts_ms;
  if (claim.partition.empty()) {
    auto key = fleet_region_key(region);
    if (claim.state == fleet_claim_state::up)
      r->regions.erase(key); // withdraws this reporter's vote, nothing more
    else
      r->regions[key] = {claim,
                         now + std::min(claim.ttl, options_.max_claim_ttl)};
  }
  return counted(fleet_drop::accepted);
}

void fleet_health::local_success(std::string_view region,
                                 clock::time_point now) {
  local_success_[fleet_region_key(region)] = now;
}

void fleet_health::local_failure(std::string_view region,
                                 clock::time_point now) {
  local_failure_[fleet_region_key(region)] = now;
}

void fleet_health::probe_succeeded(std::string_view region,
                                   clock::time_point now) {
  auto key = fleet_region_key(region);
  local_success_[key] = now;
  auto it = verdicts_.find(key);
  if (it != verdicts_.end() &&
      it->second.state == verdict_state::awaiting_probe) {
    verdicts_.erase(it);
    ++counters_.restored_by_probe;
  }
}

bool fleet_health::counts(const reporter& r, const held_claim& c,
                          clock::time_point now) const {
  // A flooding reporter's claims were dropped with the penalty (take_token).
  if (c.expires <= now) return false;
  if (c.claim.state != fleet_claim_state::down) return false;
  if (c.claim.local_health >= options_.unhealthy_score) return false;
  if (c.claim.evidence.successes_other == 0) return false;
  // A reporter that holds live claims against two or more regions is a
  // sick observer: none of its claims count.
  size_t live = 0;
  for (const auto& [_, other] : r.regions)
    if (other.expires > now && other.claim.state == fleet_claim_state::down)
      ++live;
  return live < 2;
}

uint32_t fleet_health::votes(std::string_view region,
                             clock::time_point now) const {
  auto key = fleet_region_key(region);
  uint32_t n = 0;
  for (const auto& [_, r] : reporters_) {
    auto it = r.regions.find(key);
    if (it != r.regions.end() && counts(r, it->second, now)) ++n;
  }
  return n;
}

bool fleet_health::vetoed(const std::string& key, clock::time_point now) const {
  auto it = local_success_.find(key);
  if (it == local_success_.end() || now - it->second > options_.local_veto)
    return false;
  auto failed = local_failure_.find(key);
  return failed == local_failure_.end() || failed->second <= it->second;
}

void fleet_health::forget_idle(clock::time_point now) {
  // A reporter with no live claim, not under a penalty and not heard from
  // for longer than any report of it could still be accepted (the clock
  // skew bounds a replay) is forgotten.
  for (auto it = reporters_.begin(); it != reporters_.end();) {
    auto& r = it->second;
    for (auto c = r.regions.begin(); c != r.regions.end();)
      c = c->second.expires <= now ? r.regions.erase(c) : std::next(c);
    bool idle = r.regions.empty() && now >= r.ignored_until &&
                now - r.last_heard > 2 * options_.max_clock_skew;
    it = idle ? reporters_.erase(it) : std::next(it);
  }
}

fleet_view fleet_health::evaluate(const std::vector<std::string>& read_regions,
                                  bool multi_write, clock::time_point now) {
  forget_idle(now);
  std::vector<std::string> keys;
  keys.reserve(read_regions.size());
  for (const auto& r : read_regions)
    keys.push_back(fleet_region_key(r));
  auto listed = [&](const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  // Verdicts on regions the account no longer lists go.
  for (auto it = verdicts_.begin(); it != verdicts_.end();)
    it = listed(it->first) ? std::next(it) : verdicts_.erase(it);
  for (auto it = held_back_.begin(); it != held_back_.end();)
    it = listed(it->first) ? std::next(it) : held_back_.erase(it);

  struct candidate {
    size_t index;
    uint32_t votes;
  };
  std::vector<candidate> fresh;
  const uint32_t k = options_.min_reporters;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& key = keys[i];
    auto v = votes(key, now);
    auto held = held_back_.find(key);
    auto verdict_it = verdicts_.find(key);
    // Rule 5: the receiver's own recent success beats hearsay.
    if (vetoed(key, now)) {
      if (verdict_it != verdicts_.end()) {
        verdicts_.erase(verdict_it);
        ++counters_.verdicts_vetoed;
        held_back_[key] = held_back_by::veto;
      } else if (v >= k && (held == held_back_.end() ||
                            held->second != held_back_by::veto)) {
        ++counters_.verdicts_vetoed;
        held_back_[key] = held_back_by::veto;
      }
      continue;
    }
    if (verdict_it != verdicts_.end()) {
      auto& verdict = verdict_it->second;
      if (v >= k)
        verdict.state = verdict_state::applied;
      else if (verdict.state == verdict_state::applied &&
               now - verdict.since >= options_.min_hold)
        verdict.state = verdict_state::awaiting_probe; // rule 7
      continue;
    }
    if (v >= k)
      fresh.push_back({i, v});
    else if (held != held_back_.end())
      held_back_.erase(held); // the episode is over
  }
  // Rule 6: never the last region. The most votes first, then the later
  // in the preference order.
  std::sort(fresh.begin(), fresh.end(),
            [](const candidate& a, const candidate& b) {
              return a.votes != b.votes ? a.votes > b.votes : a.index > b.index;
            });
  size_t demoted = verdicts_.size();
  for (const auto& c : fresh) {
    const auto& key = keys[c.index];
    if (demoted + 1 >= keys.size()) {
      auto held = held_back_.find(key);
      if (held == held_back_.end() ||
          held->second != held_back_by::last_region) {
        ++counters_.verdicts_refused_last_region;
        held_back_[key] = held_back_by::last_region;
      }
      continue;
    }
    verdicts_[key] = {verdict_state::applied, now};
    held_back_.erase(key);
    ++counters_.verdicts_applied;
    ++demoted;
  }
  // The account may have lost regions since its verdicts were applied: if
  // they now cover the whole list, the most preferred region comes back.
  if (!keys.empty() && verdicts_.size() >= keys.size()) {
    verdicts_.erase(keys.front());
    ++counters_.verdicts_refused_last_region;
    held_back_[keys.front()] = held_back_by::last_region;
  }

  fleet_view view;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = verdicts_.find(keys[i]);
    if (it == verdicts_.end()) continue;
    view.demoted_for_reads.push_back(read_regions[i]);
    if (it->second.state == verdict_state::awaiting_probe)
      view.regions_to_probe.push_back(read_regions[i]);
  }
  // Hearsay never moves a single-write account's write region.
  if (multi_write) view.demoted_for_writes = view.demoted_for_reads;
  return view;
}

} // namespace georoute

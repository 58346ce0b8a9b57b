#include "tests/drill/scenario_run.hpp"

#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"
#include "tests/drill/criteria.hpp"
#include "tests/engine_loop_choice.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <malloc.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

namespace georoute::drill {

namespace {

using namespace std::chrono_literals;

constexpr const char* collection_link = "dbs/d/colls/c";
constexpr size_t seed_count = 200;
constexpr int pk_count = 40;

const std::vector<std::string>& region_names() {
  static const std::vector<std::string> names{
      "West US", "East US", "North Europe", "Southeast Asia", "Australia East"};
  return names;
}

struct drill_system_config : caf::actor_system_config {
  explicit drill_system_config(size_t threads) {
    register_types(*this);
    // The engine loop unless --engine-loop=false
    // (tests/engine_loop_choice.hpp); `threads` only sizes CAF's default
    // scheduler.
    if (!test::load_chosen_scheduler(*this, true) && threads > 0)
      set("scheduler.max-threads", threads);
  }
};

std::string fmt_ms(int64_t ms) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << static_cast<double>(ms) / 1000.0 << "s";
  return os.str();
}

// Signed requests straight to the emulator (seeding and read-back), not
// through the engine.
class direct_client {
public:
  explicit direct_client(const std::string& key_text)
      : client_(transport::http_client_options{}) {
    auto key = transport::parse_master_key(key_text);
    if (key) key_ = *key;
  }

  // Sends every request, at most 32 in flight; answers in the same order.
  std::vector<transport::outcome>
  send_all(std::vector<transport::request> reqs) {
    std::vector<transport::outcome> out(reqs.size());
    std::mutex mtx;
    std::condition_variable cv;
    size_t in_flight = 0;
    size_t done = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      {
        std::unique_lock<std::mutex> guard{mtx};
        cv.wait(guard, [&] { return in_flight < 32; });
        ++in_flight;
      }
      auto r = std::move(reqs[i]);
      transport::sign_request(r, *key_, std::chrono::system_clock::now());
      client_.send(std::move(r), [&, i](transport::outcome o) {
        std::lock_guard<std::mutex> guard{mtx};
        out[i] = std::move(o);
        --in_flight;
        ++done;
        cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> guard{mtx};
    cv.wait(guard, [&] { return done == out.size(); });
    return out;
  }

  transport::outcome send(transport::request r) {
    std::vector<transport::request> one;
    one.push_back(std::move(r));
    return send_all(std::move(one)).front();
  }

  static transport::request make(const std::string& method,
                                 const std::string& endpoint,
                                 const std::string& target,
                                 const std::string& body = {},
                                 const std::string& pk_json = {}) {
    transport::request r;
    r.method = method;
    r.endpoint = endpoint;
    r.target = target;
    r.body = body;
    r.timeout = 10s;
    if (!body.empty())
      r.headers.emplace_back("content-type", "application/json");
    if (!pk_json.empty())
      r.headers.emplace_back("x-ms-documentdb-partitionkey", pk_json);
    return r;
  }

private:
  transport::http_client client_;
  std::optional<transport::master_key> key_;
};

template <class T, class Handle, class... Ts>
caf::expected<T> ask(caf::actor_system& sys, const Handle& h,
                     caf::timespan timeout, Ts&&... xs) {
  caf::scoped_actor self{sys};
  caf::expected<T> result{caf::error{}};
  self->request(h, timeout, std::forward<Ts>(xs)...)
      .receive([&](T& x) { result = std::move(x); },
               [&](caf::error& e) { result = std::move(e); });
  return result;
}

// Bytes the allocator has handed out and not taken back, in MiB: glibc's
// arenas plus its mmapped blocks. Sanitizers bring allocators of their own:
// 0 there.
double heap_in_use_mib() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 0;
#else
  auto mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd) / (1024.0 * 1024.0);
#endif
}

// This process's resident memory, from /proc/self/statm.
std::optional<double> resident_mib() {
  std::ifstream f{"/proc/self/statm"};
  uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return std::nullopt;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

double percentile(std::vector<int64_t>& xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  auto idx = static_cast<size_t>(p * static_cast<double>(xs.size() - 1) + 0.5);
  return static_cast<double>(xs[std::min(idx, xs.size() - 1)]) / 1000.0;
}

} // namespace

scenario_run::scenario_run(const drill_options& opts,
                           const config::settings& base,
                           const progress_fn& progress, scenario_report& out)
    : opts_(opts), base_(base), progress_(progress), out_(out) {
  auto n = std::clamp<size_t>(opts.regions, 2, region_names().size());
  regions_.assign(region_names().begin(), region_names().begin() + n);
}

scenario_run::~scenario_run() {
  sampling_ = false;
  if (sampler_.joinable()) sampler_.join();
  for (auto& c : callers_)
    caf::anon_send_exit(c, caf::exit_reason::kill);
  if (feed_) caf::anon_send_exit(feed_, caf::exit_reason::kill);
  for (auto& w : watchers_)
    caf::anon_send_exit(w, caf::exit_reason::kill);
  for (auto& s : sites_)
    s.stop();
  sites_.clear();
  sys_.reset();
  cfg_.reset();
  emu_.reset();
}

int64_t scenario_run::now_ms() const {
  return rec_ ? rec_->now_us() / 1000 : 0;
}

int64_t scenario_run::at_ms(double fraction) const {
  return static_cast<int64_t>(fraction *
                              static_cast<double>(opts_.duration.count()));
}

void scenario_run::note(const std::string& line) {
  out_.notes.push_back(line);
}

void scenario_run::require(const std::string& requirement,
                           const std::string& measured, bool passed) {
  out_.criteria.push_back(criterion{requirement, measured, passed});
}

bool scenario_run::setup(world_options w) {
  world_ = w;
  deadline_ = w.deadline.count() > 0 ? w.deadline : opts_.deadline;
  emulator::emulator_options eo;
  eo.engine.regions = regions_;
  eo.engine.multi_write = w.multi_write;
  eo.engine.per_partition_failover = w.per_partition_failover;
  auto started = emulator::emulator::start(eo);
  if (!started) {
    note("the emulator did not start: " + started.error().what);
    return false;
  }
  emu_ = std::move(*started);
  if (!w.write_order.empty()) {
    auto set = emu_->control().set_write_regions(w.write_order);
    if (!set) {
      note("setting the write order failed: " + set.error().what);
      return false;
    }
  }
  // The collection and the seed documents, straight to the emulator.
  direct_client direct{emu_->key()};
  auto global = emu_->global_endpoint();
  for (
      auto [target, body] :
      {std::pair<std::string, std::string>{"/dbs", R"({"id":"d"})"},
       {"/dbs/d/colls",
        R"({"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}})"}}) {
    auto o = direct.send(direct_client::make("POST", global, target, body));
    if (o.status != 201) {
      note("creating " + target + " failed: " + describe_outcome_short(o));
      return false;
    }
  }
  for (const auto& id : w.extra_collections) {
    auto o = direct.send(direct_client::make(
        "POST", global, "/dbs/d/colls",
        nlohmann::json{{"id", id},
                       {"partitionKey",
                        {{"paths", {"/pk"}}, {"kind", "Hash"}, {"version", 2}}}}
            .dump()));
    if (o.status != 201) {
      note("creating collection " + id +
           " failed: " + describe_outcome_short(o));
      return false;
    }
  }
  seeds_ = std::make_shared<seed_set>();
  std::vector<transport::request> creates;
  for (size_t i = 0; i < seed_count; ++i) {
    auto id = "seed-" + std::to_string(i);
    auto pk = "p" + std::to_string(i % pk_count);
    seeds_->docs.emplace_back(id, pk);
    creates.push_back(direct_client::make(
        "POST", global, "/dbs/d/colls/c/docs",
        nlohmann::json{{"id", id}, {"pk", pk}, {"seed", true}, {"n", i}}.dump(),
        nlohmann::json::array({pk}).dump()));
  }
  auto created = direct.send_all(std::move(creates));
  for (const auto& o : created)
    if (o.status != 201) {
      note("seeding failed: " + describe_outcome_short(o));
      return false;
    }
  // One engine per region, each preferring its own region.
  cfg_ = std::make_unique<drill_system_config>(base_.scheduler_threads);
  sys_ = std::make_unique<caf::actor_system>(*cfg_);
  for (size_t i = 0; i < regions_.size(); ++i) {
    auto s = base_;
    s.account_endpoint = global;
    s.account_key = config::secret{emu_->key()};
    s.account_key_source = "the drill's emulator";
    std::vector<std::string> order{regions_[i]};
    for (const auto& r : regions_)
      if (r != regions_[i]) order.push_back(r);
    s.location.preferred_regions = order;
    // `georoute --log-level=L` sets GEOROUTE_LOG_LEVEL: every site's engine
    // logs to stderr, its lines tagged with the site.
    engine_options eo;
    if (const char* v = std::getenv("GEOROUTE_LOG_LEVEL"); v && *v) {
      if (auto level = parse_log_level(v)) {
        auto out = make_stream_sink(std::cerr);
        auto site = "site " + regions_[i] + ": ";
        // Each line says when, since the workload started ("-" before it),
        // as the report's times do.
        eo.log = [out, site, epoch = log_epoch_](const log_record& r) {
          auto tagged = r;
          auto start = epoch->load();
          auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         recorder::clock::now().time_since_epoch())
                         .count();
          char at[32] = "-";
          if (start != 0)
            std::snprintf(at, sizeof at, "+%.3f s", (now - start) / 1e9);
          tagged.component = std::string{at} + " " + site + r.component;
          out(tagged);
        };
        eo.log_min_level = *level;
      }
    }
    auto e = engine::start(*sys_, s, eo);
    if (!e) {
      note("engine " + std::to_string(i) +
           " did not start: " + sys_->render(e.error()));
      return false;
    }
    sites_.push_back(std::move(*e));
  }
  // Every site routes to the regions (its first account read landed).
  for (size_t i = 0; i < sites_.size(); ++i) {
    bool ready = false;
    for (int n = 0; n < 250 && !ready; ++n) {
      auto r = ask<resolution>(*sys_, sites_[i].locations(), 5s, resolve_atom_v,
                               resolve_input{});
      ready = r && r->endpoint != global;
      if (!ready) std::this_thread::sleep_for(20ms);
    }
    if (!ready) {
      note("site " + regions_[i] + " never read the account");
      return false;
    }
  }
  return true;
}

uint64_t scenario_run::account_fetches() {
  uint64_t n = 0;
  for (auto& s : sites_) {
    auto st =
        ask<endpoint_manager_stats>(*sys_, s.endpoints(), 5s, stats_atom_v);
    if (st) n += st->fetches_started;
  }
  return n;
}

void scenario_run::start_workload() {
  emu_->control().reset_counters();
  fetches_at_start_ = account_fetches();
  // Under --cpu-hog failed writes are not judged one by one (the machine
  // times them out anywhere): a folding run folds them too.
  rec_ =
      std::make_shared<recorder>(recorder::clock::now(), world_.fold_successes,
                                 opts_.leak_per_op, opts_.cpu_hog > 0);
  log_epoch_->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        rec_->start().time_since_epoch())
                        .count());
  auto per_caller = opts_.rate / std::max<uint32_t>(opts_.callers, 1);
  for (uint32_t i = 0; i < opts_.callers; ++i) {
    caller_setup c;
    c.site = static_cast<int>(i % sites_.size());
    c.index = static_cast<int>(i);
    auto* site = &sites_[static_cast<size_t>(c.site)];
    c.current_router = [site] { return site->router(); };
    c.rec = rec_;
    c.seeds = seeds_;
    c.collection_link = collection_link;
    c.global_endpoint = emu_->global_endpoint();
    c.tag = out_.id;
    c.mix = world_.mix;
    c.rate = per_caller;
    c.deadline = deadline_;
    c.budget_is_deadline = world_.budget_is_deadline;
    if (world_.exclude_every_region) c.excluded_regions = regions_;
    c.write_ids = world_.write_ids;
    c.batch_ids = world_.batch_ids;
    c.seed = opts_.seed * 1000003 + i;
    callers_.push_back(spawn_caller(*sys_, std::move(c)));
  }
  // The change-feed consumer, on the second region's site: the one the
  // scenarios with a failing secondary region (S1, S6's other site, the
  // grey ones) hurt. It reads the whole collection from the beginning.
  feed_log_ = std::make_shared<feed_log>();
  feed_consumer_setup fc;
  for (auto& site : sites_) {
    auto* s = &site;
    fc.sites.push_back([s] { return s->router(); });
  }
  fc.home = std::min<size_t>(1, sites_.size() - 1);
  fc.collection_link = collection_link;
  fc.deadline = deadline_; // the callers' (S6: shorter than a failover)
  if (world_.exclude_every_region) fc.excluded_regions = regions_;
  fc.log = feed_log_;
  feed_ = spawn_feed_consumer(*sys_, std::move(fc));
  sampling_ = true;
  sampler_ = std::thread{[this] { sample_backend(); }};
  progress_(out_.id + " " + out_.title + ": running for " +
                fmt_ms(opts_.duration.count()),
            true);
}

// Once a second: what the emulator answered since the last sample.
void scenario_run::sample_backend() {
  emulator::status_counters last;
  std::vector<uint64_t> accepted_last;
  int64_t k = 0;
  auto start = rec_->start();
  auto take = [&](int64_t t_ms) {
    auto now = emu_->control().counters();
    backend_second b;
    b.t_ms = t_ms;
    for (const auto& [region, by_status] : now) {
      auto name = region.empty() ? std::string{"(global)"} : region;
      auto at =
          std::find(backend_regions_.begin(), backend_regions_.end(), name);
      auto index = static_cast<uint16_t>(at - backend_regions_.begin());
      if (at == backend_regions_.end()) backend_regions_.push_back(name);
      for (const auto& [status, count] : by_status) {
        auto before = last[region][status];
        if (count > before)
          b.counts.push_back({index, static_cast<int16_t>(status),
                              static_cast<uint32_t>(count - before)});
      }
    }
    b.counts.shrink_to_fit();
    backend_counts_bytes_ += b.counts.capacity() * sizeof(backend_count);
    last = std::move(now);
    // Connections accepted, queued and open, and requests held, per region:
    // what tells a region that stopped taking new connections (a queue), or
    // held requests, from one that answered late, and a client that churns
    // connections (many accepted, few open) from one that keeps them.
    b.connections.reserve(regions_.size());
    accepted_last.resize(regions_.size(), 0);
    for (size_t r = 0; r < regions_.size(); ++r) {
      auto accepted = emu_->accepted_connections(regions_[r]);
      b.connections.push_back(
          {static_cast<uint32_t>(accepted - accepted_last[r]),
           static_cast<uint32_t>(emu_->held_requests(regions_[r])),
           static_cast<uint32_t>(emu_->accept_queue(regions_[r])),
           static_cast<uint32_t>(emu_->open_connections(regions_[r]))});
      accepted_last[r] = accepted;
    }
    backend_counts_bytes_ +=
        b.connections.capacity() * sizeof(b.connections.front());
    // The breakers' transitions in this second, and how far each range got.
    engine_sample e;
    e.t_ms = t_ms;
    // The emulator first, then the routers: a request that reached the
    // emulator was admitted by its router before, so a probe counted here
    // is never missing from the routers' count of the same sample.
    if (world_.sample_engines)
      for (const auto& [key, tally] : emu_->control().counters_by_range()) {
        uint64_t n = tally.held;
        for (const auto& [status, count] : tally.by_status)
          n += count;
        e.reached[key] = n;
      }
    e.counted_ms = now_ms();
    for (auto& s : sites_)
      if (auto st = ask<router_stats>(*sys_, s.router(), 1s, stats_atom_v)) {
        e.breaker_opened += st->breaker_opened;
        e.breaker_probes += st->breaker_probes;
        e.breaker_closed += st->breaker_closed;
      }
    const engine_sample* prev =
        engine_samples_.empty() ? nullptr : &engine_samples_.back();
    if (prev && e.breaker_opened > prev->breaker_opened)
      b.breaker_opened =
          static_cast<uint32_t>(e.breaker_opened - prev->breaker_opened);
    if (prev && e.breaker_closed > prev->breaker_closed)
      b.breaker_closed =
          static_cast<uint32_t>(e.breaker_closed - prev->breaker_closed);
    // Only the scenarios that judge the series keep it: one map per second
    // would otherwise grow with the run and show in its memory curve.
    if (!world_.sample_engines) engine_samples_.clear();
    engine_samples_.push_back(std::move(e));
    backend_seconds_.push_back(std::move(b));
    sample_memory(t_ms);
  };
  while (sampling_) {
    auto next = start + std::chrono::seconds{k + 1};
    while (sampling_ && recorder::clock::now() < next)
      std::this_thread::sleep_for(10ms);
    if (!sampling_) break;
    take(k * 1000);
    ++k;
  }
  take(k * 1000); // the partial last second
}

void scenario_run::sample_memory(int64_t t_ms) {
  // A day's run at one sample a second would be 86,400 samples: past
  // max_memory_samples every other one is dropped and the period doubles,
  // so the series stays bounded and evenly spaced.
  constexpr size_t max_memory_samples = 4096;
  if (++memory_tick_ < memory_every_) return;
  memory_tick_ = 0;
  auto untrimmed = resident_mib();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Free pages back to the system first (as the bench's memory rows do):
  // the resident figure is then what the process holds, not the highest
  // its heap has been. Without it, one burst of held requests leaves a
  // step that stays, and a slope reads the step as growth; a leak, or
  // fragmentation that pins pages, still shows.
  malloc_trim(0);
#endif
  auto rss = resident_mib();
  if (!rss) return;
  size_t feed_bytes = 0;
  if (feed_log_) {
    std::lock_guard<std::mutex> guard{feed_log_->mtx};
    feed_bytes = feed_log_->ledger.bytes_held();
  }
  size_t records = rec_->bytes_held() + feed_bytes +
                   memory_.capacity() * sizeof(memory_point) +
                   backend_seconds_.capacity() * sizeof(backend_second) +
                   backend_counts_bytes_;
  memory_.push_back({t_ms, *rss, heap_in_use_mib(),
                     static_cast<double>(records) / (1024.0 * 1024.0),
                     untrimmed.value_or(*rss)});
  if (memory_.size() < max_memory_samples) return;
  size_t kept = 0;
  for (size_t i = 0; i < memory_.size(); i += 2)
    memory_[kept++] = memory_[i];
  memory_.resize(kept);
  memory_every_ *= 2;
}

void scenario_run::wait_until(double fraction) {
  wait_until_ms(at_ms(fraction));
}

void scenario_run::wait_until_ms(int64_t until) {
  int64_t last_report = -1;
  while (now_ms() < until) {
    std::this_thread::sleep_for(std::min<int64_t>(50, until - now_ms()) * 1ms);
    auto t = now_ms();
    if (t / 250 != last_report) {
      last_report = t / 250;
      std::ostringstream line;
      line << out_.id << " " << fmt_ms(t) << "/"
           << fmt_ms(opts_.duration.count()) << "  ops "
           << (rec_->ok + rec_->failed + rec_->timed_out) << "  ok " << rec_->ok
           << "  failed " << rec_->failed << "  timed out " << rec_->timed_out
           << "  in flight " << rec_->outstanding;
      progress_(line.str(), false);
    }
  }
}

void scenario_run::fault(const std::string& label, const std::string& region,
                         const std::function<void()>& apply) {
  apply();
  fault_marker m;
  m.at_ms = now_ms();
  m.label = label;
  m.region = region;
  progress_(out_.id + " +" + fmt_ms(m.at_ms) + " " + label, true);
  out_.faults.push_back(std::move(m));
}

void scenario_run::finish() {
  out_.duration_ms = now_ms();
  for (auto& c : callers_)
    stop_caller(c);
  // Every operation ends by its deadline; give the callers a margin.
  auto give_up = recorder::clock::now() + deadline_ + 5s;
  while (rec_->outstanding > 0 && recorder::clock::now() < give_up)
    std::this_thread::sleep_for(10ms);
  if (rec_->outstanding > 0)
    note(std::to_string(rec_->outstanding.load()) +
         " operations never ended (a stuck request)");
  sampling_ = false;
  if (sampler_.joinable()) sampler_.join();
  out_.account_refreshes = account_fetches() - fetches_at_start_;
  // Lift every fault, then let the engines finish what they decided.
  emu_->control().clear_faults();
  for (const auto& r : regions_)
    emu_->set_region_state(r, emulator::region_state::online);
  // The feed consumer holds still while the engines go quiet (its pages
  // would keep them busy); it drains once nothing is left in flight.
  if (feed_)
    feed_paused_ = pause_feed_consumer(*sys_, feed_, opts_.deadline + 5s);
  give_up = recorder::clock::now() + 15s;
  for (;;) {
    router_stats total;
    bool quiet = true;
    for (auto& s : sites_) {
      auto st = ask<router_stats>(*sys_, s.router(), 5s, stats_atom_v);
      if (!st) {
        quiet = false;
        continue;
      }
      total.operations += st->operations;
      total.attempts += st->attempts;
      total.succeeded += st->succeeded;
      total.failed += st->failed;
      total.failover_decisions += st->failover_decisions;
      total.failover_decisions_completed += st->failover_decisions_completed;
      total.decisions_after_budget += st->decisions_after_budget;
      total.marks += st->marks;
      total.refreshes += st->refreshes;
      total.metadata_refreshes += st->metadata_refreshes;
      total.live += st->live;
      total.hedges_started += st->hedges_started;
      total.hedges_won += st->hedges_won;
      total.hedges_refused += st->hedges_refused;
      total.hedge_charge += st->hedge_charge;
      total.late_answers += st->late_answers;
      total.breaker_opened += st->breaker_opened;
      total.breaker_probes += st->breaker_probes;
      total.breaker_closed += st->breaker_closed;
      total.breaker_reopened += st->breaker_reopened;
      total.breaker_skips += st->breaker_skips;
      if (st->live > 0 ||
          st->failover_decisions != st->failover_decisions_completed)
        quiet = false;
    }
    router_totals_ = total;
    if (quiet || recorder::clock::now() > give_up) break;
    std::this_thread::sleep_for(50ms);
  }
  ops_ = rec_->all();
  folded_ = rec_->folded();
  // Read back every acknowledged write from the emulator itself.
  std::vector<transport::request> reads;
  std::vector<std::string> ids;
  std::vector<std::string> tracking;
  auto writer = emu_->endpoint(emu_->control().write_regions().front());
  std::set<std::string> written = folded_.written_ids;
  auto last_tracking = folded_.last_tracking;
  for (const auto& op : ops_) {
    if (op.written_id.empty()) continue;
    written.insert(op.written_id);
    if (op.tracking_id.empty()) continue;
    auto& last = last_tracking[op.written_id];
    if (op.end_us >= last.first) last = {op.end_us, op.tracking_id};
  }
  for (const auto& written_id : written) {
    auto nl = written_id.find('\n');
    auto id = written_id.substr(0, nl);
    auto pk = written_id.substr(nl + 1);
    auto t = last_tracking.find(written_id);
    tracking.push_back(t == last_tracking.end() ? std::string{}
                                                : t->second.second);
    ids.push_back(id);
    reads.push_back(direct_client::make("GET", writer,
                                        "/dbs/d/colls/c/docs/" + id, {},
                                        nlohmann::json::array({pk}).dump()));
  }
  // Only 200 or 404 decide; a read-back that timed out (an overloaded
  // machine) is asked again, and what stays undecided is unverified, not
  // lost.
  if (!reads.empty()) {
    direct_client direct{emu_->key()};
    readback_ = verify_writes(
        ids, reads,
        [&](std::vector<transport::request> round) {
          return direct.send_all(std::move(round));
        },
        8, 2s, tracking);
  }
  verify_batches(writer);
  {
    direct_client direct{emu_->key()};
    finish_feed(written, [&](transport::request r) {
      return direct.send(std::move(r));
    });
  }
  summarize();
  common_criteria();
  teardown();
  progress_(out_.id + " done", true);
}

// Stops every engine and checks that nothing is left: no actor running in
// the system, no connection open at the emulator.
void scenario_run::teardown() {
  for (auto& w : watchers_)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  watchers_.clear();
  for (auto& s : sites_)
    s.stop();
  // The emulator notices a closed socket on its io threads, which an
  // overloaded machine (--cpu-hog) may leave waiting for seconds.
  auto give_up = recorder::clock::now() + (opts_.cpu_hog > 0 ? 20s : 5s);
  size_t actors = 0;
  uint64_t connections = 0;
  for (;;) {
    actors = sys_->registry().running();
    connections = emu_->open_connections();
    if ((actors == 0 && connections == 0) || recorder::clock::now() > give_up)
      break;
    std::this_thread::sleep_for(10ms);
  }
  require("no leaked actors or connections once the engines stopped",
          std::to_string(actors) + " actors running, " +
              std::to_string(connections) + " connections open",
          actors == 0 && connections == 0);
}

void scenario_run::summarize() {
  std::vector<int64_t> latencies;
  // Folded operations (the soak) count like kept ones; the latencies of
  // folded successes are in a histogram, and then every latency goes there.
  auto add_folded = [&](const std::map<op_type, uint64_t>& by_type,
                        uint64_t op_counts::*field) {
    for (const auto& [type, n] : by_type) {
      auto& k = out_.by_kind[to_string(type)];
      for (auto* c : {&k, &out_.total}) {
        c->ops += n;
        c->*field += n;
      }
    }
  };
  add_folded(folded_.successes, &op_counts::successes);
  add_folded(folded_.failures, &op_counts::failures);
  add_folded(folded_.timeouts, &op_counts::timeouts);
  for (const auto& [region, n] : folded_.served_by)
    out_.served_by[region] += n;
  auto histogram = folded_.latency;
  for (const auto& op : ops_) {
    auto& k = out_.by_kind[to_string(op.type)];
    for (auto* c : {&k, &out_.total}) {
      ++c->ops;
      switch (op.result) {
      case op_result::success:
        ++c->successes;
        break;
      case op_result::failure:
        ++c->failures;
        break;
      case op_result::timeout:
        ++c->timeouts;
        break;
      }
    }
    if (op.result == op_result::success) {
      latencies.push_back(op.end_us - op.start_us);
      ++out_.served_by[op.region];
    }
  }
  out_.success_pct = out_.total.ops == 0
                         ? 0
                         : 100.0 * static_cast<double>(out_.total.successes) /
                               static_cast<double>(out_.total.ops);
  if (histogram.count() > 0) {
    for (auto us : latencies)
      histogram.add(us);
    out_.p50_ms = histogram.percentile_ms(0.50);
    out_.p99_ms = histogram.percentile_ms(0.99);
  } else {
    out_.p50_ms = percentile(latencies, 0.50);
    out_.p99_ms = percentile(latencies, 0.99);
  }
  out_.memory = memory_;
  // The timeline: the backend samples plus the callers' outcomes.
  out_.timeline.reserve(backend_seconds_.size());
  for (const auto& second : backend_seconds_) {
    timeline_bucket b;
    b.t_ms = second.t_ms;
    for (const auto& c : second.counts)
      b.backend[backend_regions_[c.region]][c.status] = c.count;
    for (size_t r = 0; r < second.connections.size(); ++r) {
      const auto& c = second.connections[r];
      if (c.accepted > 0) b.accepted[regions_[r]] = c.accepted;
      if (c.held > 0) b.held[regions_[r]] = c.held;
      if (c.queued > 0) b.queued[regions_[r]] = c.queued;
      if (c.open > 0) b.open[regions_[r]] = c.open;
    }
    if (second.breaker_opened > 0)
      b.callers["breaker_opened"] = second.breaker_opened;
    if (second.breaker_closed > 0)
      b.callers["breaker_closed"] = second.breaker_closed;
    out_.timeline.push_back(std::move(b));
  }
  auto last_ms = out_.duration_ms;
  while (static_cast<int64_t>(out_.timeline.size()) * 1000 <= last_ms) {
    timeline_bucket b;
    b.t_ms = static_cast<int64_t>(out_.timeline.size()) * 1000;
    out_.timeline.push_back(std::move(b));
  }
  for (const auto& op : ops_) {
    auto idx = static_cast<size_t>(std::max<int64_t>(op.end_us, 0) / 1000000);
    if (idx >= out_.timeline.size()) idx = out_.timeline.size() - 1;
    auto& callers = out_.timeline[idx].callers;
    ++callers[to_string(op.result)];
    if (op.hedged) ++callers[op.hedge_won ? "hedge_won" : "hedged"];
  }
  for (size_t second = 0; second < folded_.per_second.size(); ++second) {
    auto idx = std::min(second, out_.timeline.size() - 1);
    for (auto result :
         {op_result::success, op_result::failure, op_result::timeout}) {
      auto n = folded_.per_second[second][static_cast<size_t>(result)];
      if (n > 0) out_.timeline[idx].callers[to_string(result)] += n;
    }
  }
  for (const auto& b : out_.timeline)
    for (const auto& [region, by_status] : b.backend)
      for (const auto& [status, count] : by_status)
        out_.backend[region][status] += count;
}

// Every pair a transactional batch wrote to (or may have) is read back
// whole: both documents from one batch, or neither. A batch answered "may
// have been applied" is settled where the read-back can tell: its pair
// carries its own id (applied), or another's (not applied, or overwritten
// since).
void scenario_run::verify_batches(const std::string& writer) {
  std::set<std::string> pairs = folded_.batch_pairs;
  for (const auto& op : ops_)
    if (!op.batch_pair.empty()) pairs.insert(op.batch_pair);
  if (pairs.empty()) return;
  std::vector<std::string> keys{pairs.begin(), pairs.end()};
  std::vector<transport::request> reads;
  for (const auto& pair : keys) {
    auto nl = pair.find('\n');
    auto id = pair.substr(0, nl);
    auto pk = nlohmann::json::array({pair.substr(nl + 1)}).dump();
    for (const char* part : {"a", "b"})
      reads.push_back(direct_client::make(
          "GET", writer, "/dbs/d/colls/c/docs/" + id + part, {}, pk));
  }
  direct_client direct{emu_->key()};
  batch_pairs_ = verify_batch_pairs(
      keys, reads,
      [&](std::vector<transport::request> round) {
        return direct.send_all(std::move(round));
      },
      8, 2s);
  uint64_t ambiguous = 0, applied = 0;
  for (const auto& op : ops_) {
    if (op.batch_id.empty() || op.result == op_result::success) continue;
    ++ambiguous;
    auto b = batch_pairs_.batch_of.find(op.batch_pair);
    if (b != batch_pairs_.batch_of.end() && b->second == op.batch_id) ++applied;
  }
  if (ambiguous > 0)
    note(std::to_string(ambiguous) +
         " transactional batches failed or timed out; at the read-back " +
         std::to_string(applied) +
         " of them were found applied (their pair carries their id), the "
         "others not applied or overwritten since");
}

void scenario_run::common_criteria() {
  uint64_t stuck =
      static_cast<uint64_t>(std::max<int64_t>(rec_->outstanding, 0));
  require("every operation ends by its caller's deadline (no stuck request)",
          std::to_string(stuck) + " stuck", stuck == 0);
  // A failure the engine returned before the caller's deadline: a retry
  // would still have been allowed. The first is the one that ended first,
  // kept whole or folded.
  std::string first_failure = folded_.first_failure;
  int64_t first_at = folded_.first_failure_us;
  for (const auto& op : ops_)
    if (op.result == op_result::failure &&
        (first_at < 0 || op.end_us < first_at)) {
      first_at = op.end_us;
      first_failure = op.error.substr(0, 400);
    }
  // What the users were told: the failures grouped by their text (numbers,
  // ports and ids blanked), the most common first, one example each.
  std::map<std::string, failure_group> by_text = folded_.failure_texts;
  for (const auto& op : ops_) {
    if (op.result != op_result::failure) continue;
    auto& g = by_text[failure_group_key(op.type, op.error)];
    if (g.count++ == 0) g.example = op.error.substr(0, 300);
  }
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const auto& [key, g] : by_text)
    ranked.emplace_back(g.count,
                        key.substr(0, key.find(':')) + ": " + g.example);
  std::sort(ranked.begin(), ranked.end(), std::greater<>{});
  for (size_t i = 0; i < ranked.size() && i < 6; ++i)
    note("failures " + std::to_string(ranked[i].first) + "x " +
         ranked[i].second);
  if (folded_.other_texts > 0)
    note("failures " + std::to_string(folded_.other_texts) +
         "x with texts beyond the first " +
         std::to_string(folded_ops::max_groups) + " kinds (not grouped)");
  require("user-visible failures = 0",
          std::to_string(out_.total.failures) +
              (first_failure.empty() ? "" : " (first: " + first_failure + ")"),
          out_.total.failures == 0);
  // What each failure kept whole went through, but for the writes that
  // timed out in flight (a scenario may excuse those, and describes the
  // ones it cannot).
  constexpr size_t described = 10;
  size_t shown = 0, more = 0;
  for (const auto& op : ops_) {
    if (op.result != op_result::failure || timed_out_in_engine(op)) continue;
    if (shown++ < described)
      note("failed " + describe_op(op, out_.faults));
    else
      ++more;
  }
  if (more > 0)
    note("... and " + std::to_string(more) + " more failures (not described)");
  const auto& rb = readback_;
  require(
      "acknowledged writes lost = 0",
      std::to_string(rb.missing) + " of " + std::to_string(rb.checked) +
          " read back (404)" +
          (rb.missing_example.empty() ? "" : " (" + rb.missing_example + ")"),
      rb.missing == 0 && rb.checked > 0);
  if (rb.tracked > 0 || engine_settings().retry.write_retries)
    require(
        "acknowledged writes that are somebody else's document (not "
        "their own tracking id) = 0",
        std::to_string(rb.foreign) + " of " + std::to_string(rb.tracked) +
            " tracked" +
            (rb.foreign_example.empty() ? "" : " (" + rb.foreign_example + ")"),
        rb.foreign == 0 && rb.tracked > 0);
  require("every acknowledged write verified by a read-back (200 or 404)",
          std::to_string(rb.unverified) + " undecided after " +
              std::to_string(rb.rounds) + " round(s)" +
              (rb.unverified_example.empty()
                   ? ""
                   : " (last answer: " + rb.unverified_example + ")"),
          rb.unverified == 0);
  if (const auto& bp = batch_pairs_; bp.pairs > 0) {
    std::string example = !bp.torn_example.empty()        ? bp.torn_example
                          : !bp.undecided_example.empty() ? bp.undecided_example
                                                          : std::string{};
    require("transactional batches all or nothing: both documents of every "
            "pair read back from one batch, or neither",
            std::to_string(bp.pairs) + " pairs: " + std::to_string(bp.whole) +
                " whole, " + std::to_string(bp.absent) + " absent, " +
                std::to_string(bp.torn) + " torn, " +
                std::to_string(bp.undecided) + " undecided after " +
                std::to_string(bp.rounds) + " round(s)" +
                (example.empty() ? "" : " (" + example.substr(0, 300) + ")"),
            bp.torn == 0 && bp.undecided == 0 && bp.whole > 0);
  }
  uint64_t complete = folded_.complete_queries, dup = 0, missing = 0;
  for (const auto& op : ops_)
    if (op.type == op_type::query && op.result == op_result::success) {
      ++complete;
      dup += op.duplicates;
      missing += op.missing;
    }
  require("cross-partition queries return every seed document exactly once",
          std::to_string(complete) + " complete, " + std::to_string(dup) +
              " duplicates, " + std::to_string(missing) + " missing",
          complete > 0 && dup == 0 && missing == 0);
  uint64_t global = 0;
  for (const auto& op : ops_)
    if (op.result == op_result::success && op.region == "(global)") ++global;
  require("no operation served by the region-agnostic account endpoint",
          std::to_string(global), global == 0);
  feed_criteria();
}

void scenario_run::watch_locations() {
  for (size_t i = table_logs_.size(); i < sites_.size(); ++i) {
    auto log = std::make_shared<table_log>();
    table_logs_.push_back(log);
    auto cache = sites_[i].locations();
    auto keep = [log](const location_snapshot& s) {
      std::lock_guard<std::mutex> guard{log->mtx};
      log->tables.emplace_back(std::chrono::steady_clock::now(), s.table);
    };
    watchers_.push_back(sys_->spawn(
        [cache, keep](caf::event_based_actor* self) -> caf::behavior {
          self->monitor(cache);
          self->set_down_handler([self](caf::down_msg&) { self->quit(); });
          self->request(cache, caf::infinite, subscribe_atom_v,
                        caf::actor_cast<caf::actor>(self))
              .then([keep](location_snapshot& s) { keep(s); });
          return {[self, cache, keep](snapshot_atom, location_snapshot& s) {
            if (self->current_sender() == cache.address()) keep(s);
          }};
        }));
  }
}

bool scenario_run::was_marked(int site, const std::string& endpoint, op_kind op,
                              int64_t at_us,
                              std::chrono::milliseconds grace) const {
  if (!rec_ || site < 0 || static_cast<size_t>(site) >= table_logs_.size())
    return false;
  const auto& log = *table_logs_[static_cast<size_t>(site)];
  auto at = rec_->start() + std::chrono::microseconds{at_us};
  std::shared_ptr<const location_table> table;
  {
    std::lock_guard<std::mutex> guard{log.mtx};
    for (const auto& [when, t] : log.tables) {
      if (when + grace > at) break;
      table = t;
    }
  }
  return table && table->is_unavailable(endpoint, op, at);
}

std::optional<int64_t> scenario_run::first_marked(int site,
                                                  const std::string& endpoint,
                                                  op_kind op,
                                                  int64_t from_ms) const {
  if (!rec_ || site < 0 || static_cast<size_t>(site) >= table_logs_.size())
    return std::nullopt;
  const auto& log = *table_logs_[static_cast<size_t>(site)];
  std::lock_guard<std::mutex> guard{log.mtx};
  for (const auto& [when, t] : log.tables) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  when - rec_->start())
                  .count();
    if (ms >= from_ms && t && t->is_unavailable(endpoint, op, when)) return ms;
  }
  return std::nullopt;
}

void scenario_run::failover_after(
    int64_t fault_ms, const std::string& from,
    const std::function<bool(const op_record&)>& affected) {
  std::optional<int64_t> first;
  for (const auto& op : ops_) {
    if (op.result != op_result::success || op.end_us / 1000 < fault_ms)
      continue;
    if (op.region == from || op.region == "(global)" || !affected(op)) continue;
    if (!first || op.end_us / 1000 < *first) first = op.end_us / 1000;
  }
  if (first) {
    out_.failover_at_ms = *first;
    out_.failover_ms = *first - fault_ms;
  }
}

} // namespace georoute::drill

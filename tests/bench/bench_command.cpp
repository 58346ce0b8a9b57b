#include "tests/bench/bench_command.hpp"

#include "georoute/config/settings.hpp"
#include "tests/bench/alloc_count.hpp"
#include "tests/bench/bench_options.hpp"
#include "tests/bench/echo_load.hpp"
#include "tests/bench/georoute_load.hpp"
#include "tests/bench/memory.hpp"
#include "tests/bench/report.hpp"
#include "tests/bench/scenarios.hpp"
#include "tests/engine_loop_choice.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace georoute::bench {

namespace {

// A loopback port where nothing listens: bound once to learn it, then
// closed, so connecting there is refused. 1 (never listened on by a test)
// if no socket could be had.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

using namespace std::chrono_literals;

/// Warm-up, then a measured window, around a load started by `start`.
template <class Start, class Stop>
round_figures timed_round(const options& o, size_t in_flight,
                          child_emulator& emu, Start start, Stop stop) {
  event_log log{in_flight};
  start(log);
  std::this_thread::sleep_for(to_ms(o.warmup));
  auto t0 = log.now_us();
  auto cpu0 = process_cpu_seconds();
  auto emu0 = process_cpu_seconds(emu.pid());
  std::this_thread::sleep_for(to_ms(o.seconds));
  auto cpu1 = process_cpu_seconds();
  auto emu1 = process_cpu_seconds(emu.pid());
  auto t1 = log.now_us();
  stop();
  auto f = figures_of(log.take(), t0, t1, cpu1 - cpu0);
  f.in_flight = in_flight;
  if (emu0 >= 0 && emu1 >= 0) f.emulator_cpu_seconds = emu1 - emu0;
  return f;
}

round_figures skipped_round(const std::string& client, size_t n, int round,
                            const std::string& why) {
  round_figures f;
  f.client = client;
  f.in_flight = n;
  f.round = round;
  f.skipped = why;
  return f;
}

round_figures peer_round(node_peer* peer, const std::string& peer_skip,
                         const options& o, size_t n, int round) {
  if (!peer) return skipped_round("peer", n, round, peer_skip);
  auto r = peer->call({{"cmd", "load"},
                       {"inFlight", n},
                       {"warmupMs", to_ms(o.warmup).count()},
                       {"windowMs", to_ms(o.seconds).count()}},
                      to_ms(o.warmup + o.seconds) + 60s);
  if (!r) return skipped_round("peer", n, round, r.error().what);
  round_figures f;
  f.client = "peer";
  f.in_flight = n;
  f.round = round;
  const auto& j = *r;
  f.ok = j.value("ok", uint64_t{0});
  f.failed = j.value("failed", uint64_t{0});
  f.seconds = j.value("seconds", 0.0);
  f.requests_per_second = j.value("rps", 0.0);
  f.p50_ms = j.value("p50", 0.0);
  f.p99_ms = j.value("p99", 0.0);
  f.cpu_seconds = j.value("cpu", 0.0);
  f.cpu_seconds_per_1k =
      f.ok > 0 ? f.cpu_seconds * 1000.0 / static_cast<double>(f.ok) : 0;
  return f;
}

/// One window of `in_flight` reads with the per-read counts: CPU, thread
/// runs and sleeps of the whole process, heap allocations, router timers.
/// `start` starts the load, `stop` stops it; `router` reads the router's
/// counters (null for the raw client).
template <class Start, class Stop>
accounting_row
accounting_round(const options& o, const std::string& client, size_t in_flight,
                 Start start, Stop stop,
                 std::function<router_stats()> router = nullptr) {
  accounting_row a;
  a.client = client;
  a.in_flight = in_flight;
  event_log log{in_flight};
  start(log);
  std::this_thread::sleep_for(to_ms(o.warmup));
  auto r0 = router ? router() : router_stats{};
  auto t0 = log.now_us();
  auto th0 = process_threads();
  auto cpu0 = process_cpu_seconds();
  alloc_count::enable(true);
  auto al0 = alloc_count::read();
  std::this_thread::sleep_for(to_ms(o.seconds));
  auto al1 = alloc_count::read();
  alloc_count::enable(false);
  auto cpu1 = process_cpu_seconds();
  auto th1 = process_threads();
  auto t1 = log.now_us();
  auto r1 = router ? router() : router_stats{};
  stop();
  auto f = figures_of(log.take(), t0, t1, cpu1 - cpu0);
  a.reads = f.ok;
  a.threads = th1.threads;
  if (a.reads == 0) {
    a.skipped = "no read succeeded in the window";
    return a;
  }
  auto per = [&](double x) { return x / static_cast<double>(a.reads); };
  a.cpu_us = per((cpu1 - cpu0) * 1e6);
  a.runs = per(static_cast<double>(th1.runs - th0.runs));
  a.sleeps =
      per(static_cast<double>(th1.voluntary_switches - th0.voluntary_switches));
  if (alloc_count::available()) {
    a.allocations = per(static_cast<double>(al1.count - al0.count));
    a.alloc_bytes = per(static_cast<double>(al1.bytes - al0.bytes));
  }
  if (router)
    a.router_timers =
        per(static_cast<double>(r1.timers_armed - r0.timers_armed));
  return a;
}

/// `in_flight` reads kept going for `o.sustain` seconds through `engine`,
/// the resident memory of this process sampled at twelve even steps. The
/// log only counts, so the bench itself holds nothing per read.
sustain_figures sustained_round(const options& o, const std::string& client,
                                georoute_driver& engine,
                                const data_request& req, size_t in_flight) {
  constexpr int steps = 12;
  constexpr int settled_step = steps / 6;
  sustain_figures f;
  f.client = client;
  f.in_flight = in_flight;
  event_log log{in_flight, steady::now(), /*keep_events=*/false};
  auto t0 = steady::now();
  auto since = [&] {
    return std::chrono::duration<double>(steady::now() - t0).count();
  };
  f.samples.emplace_back(0.0, resident_bytes());
  // The callers' timeouts outlast the run: whatever a read leaves behind
  // until its caller's timeout (CAF 0.17 keeps request timeouts until
  // their deadline unless cancelled) shows as growth.
  auto load = engine.start_load(req, in_flight, log, to_ms(o.sustain) + 10s);
  uint64_t done_at_settled = 0;
  for (int i = 1; i <= steps; ++i) {
    std::this_thread::sleep_until(t0 + to_ms(o.sustain * i / steps));
    auto rss = resident_bytes();
    f.samples.emplace_back(since(), rss);
    f.rss_max = std::max(f.rss_max, rss);
    if (i == settled_step) {
      f.rss_settled = rss;
      auto [ok, failed] = log.tally();
      done_at_settled = ok + failed;
    }
  }
  auto [ok, failed] = log.tally();
  f.seconds = since();
  if (!load->stop(30s)) f.skipped = "callers still busy 30 s after the stop";
  f.ok = ok;
  f.failed = failed;
  f.requests_per_second =
      f.seconds > 0 ? static_cast<double>(ok) / f.seconds : 0;
  f.rss_end = f.samples.back().second;
  f.reads_after_settled = ok + failed - done_at_settled;
  return f;
}

} // namespace

int run_bench_command(std::vector<std::string> args) {
  options o;
  if (auto e = parse(std::move(args), o); !e.empty()) {
    if (e == "help") {
      std::cout << usage;
      return 0;
    }
    std::cerr << e << "\n";
    return 2;
  }
  // A peer that dies must not take the bench with it.
  std::signal(SIGPIPE, SIG_IGN);
  auto started_at = steady::now();
  report rep;
  rep.command = "georoute bench";
  rep.seconds_per_round = o.seconds;
  rep.warmup_seconds = o.warmup;
  rep.rounds = o.rounds;
  rep.in_flight = o.in_flight;
  bool failed = false;

  std::string ports = "0,0,0";
  auto emu = child_emulator::start(
      self_exe(), {"--regions=West US,East US,North Europe", "--ports=" + ports,
                   "--global-port=0", "--io-threads=1"});
  if (!emu) {
    std::cerr << "georoute bench: cannot start the emulator: "
              << emu.error().what << "\n";
    return 1;
  }
  auto& em = **emu;
  log("emulator pid " + std::to_string(em.pid()) + " at " +
      em.global_endpoint());
  if (auto e = set_up(em, o); !e.empty()) {
    std::cerr << "georoute bench: set-up failed: " << e << "\n";
    return 1;
  }
  auto raw_req = raw_read(em);
  if (!raw_req) {
    std::cerr << "georoute bench: " << raw_req.error().what << "\n";
    return 1;
  }

  size_t max_in_flight =
      *std::max_element(o.in_flight.begin(), o.in_flight.end());
  driver_options d;
  d.global_endpoint = em.global_endpoint();
  d.key = em.key();
  d.preferred_regions = regions;
  d.connections = max_in_flight;
  auto drv = georoute_driver::start(d);
  if (!drv) {
    std::cerr << "georoute bench: " << drv.error().what << "\n";
    return 1;
  }
  auto read = point_read(link, doc_id, doc_pk);
  std::string err;
  if (!(*drv)->route_once(read, &err)) {
    std::cerr << "georoute bench: the first routed read failed: " << err
              << "\n";
    return 1;
  }
  // The same engine with hedging the other way round: what the machinery
  // costs when nothing is slow, measured side by side.
  auto alt_d = d;
  alt_d.hedging = !config::settings{}.hedging.enabled;
  auto alt = georoute_driver::start(alt_d);
  if (!alt) {
    std::cerr << "georoute bench: " << alt.error().what << "\n";
    return 1;
  }
  if (!(*alt)->route_once(read, &err)) {
    std::cerr << "georoute bench: the first routed read failed (" +
                     rep.alt_client + "): "
              << err << "\n";
    return 1;
  }

  // The same engine on CAF's default scheduler (the embedding default
  // without the loop module), beside the one on the program's choice.
  rep.georoute_scheduler =
      test::engine_loop_chosen(true) ? "engine loop" : "CAF default scheduler";
  auto def_d = d;
  def_d.engine_loop = false;
  auto def = georoute_driver::start(def_d);
  if (!def) {
    std::cerr << "georoute bench: " << def.error().what << "\n";
    return 1;
  }
  if (!(*def)->route_once(read, &err)) {
    std::cerr << "georoute bench: the first routed read failed ("
              << default_scheduler_client << "): " << err << "\n";
    return 1;
  }

  // The same engine with fleet health on and its NATS server absent (a
  // port where nothing listens): what sharing costs the reads when its
  // channel is dead. A build without libnats skips it and says so.
  std::unique_ptr<georoute_driver> fleet_down;
  std::string fleet_down_skip = "skipped (--skip)";
  if (!o.skipped(fleet_down_client) && !o.skipped("georoute")) {
    auto fd = d;
    fd.fleet_server = "nats://127.0.0.1:" + std::to_string(closed_port());
    auto f = georoute_driver::start(fd);
    if (!f) {
      fleet_down_skip = f.error().what;
    } else if (!(*f)->route_once(read, &err)) {
      fleet_down_skip = "the first routed read failed: " + err;
    } else {
      fleet_down = std::move(*f);
    }
    if (!fleet_down)
      log(std::string{fleet_down_client} + " skipped: " + fleet_down_skip);
  }

  // CAF's default scheduler alone: the same callers against a responder
  // that answers at once, on a system configured as the default mode's.
  std::optional<echo_driver> echo;
  echo.emplace(def_d.scheduler_threads);

  std::unique_ptr<node_peer> peer;
  std::string peer_skip = "skipped (--skip=peer)";
  if (!o.skipped("peer")) {
    auto p = node_peer::start(o.source_dir, o.peer_dir);
    if (!p) {
      peer_skip = p.error().what;
    } else {
      auto init = (*p)->call({{"cmd", "init"},
                              {"endpoint", em.global_endpoint()},
                              {"key", em.key()},
                              {"db", db},
                              {"coll", coll},
                              {"id", doc_id},
                              {"pk", doc_pk},
                              {"preferred", regions},
                              {"requestTimeoutMs", 1000}},
                             60s);
      if (!init) {
        peer_skip = init.error().what;
      } else {
        rep.peer_version =
            "@azure/cosmos on Node " + init->value("node", std::string{"?"});
        peer = std::move(*p);
      }
    }
    if (!peer) log("peer skipped: " + peer_skip);
  }

  // Interleaved rounds: every level and client once per round, the client
  // order rotating, so that noise hits all alike.
  const std::vector<std::string> clients{
      "raw",          "georoute", default_scheduler_client, echo_client,
      rep.alt_client, "peer",     fleet_down_client};
  for (int round = 0; round < o.rounds; ++round) {
    for (auto n : o.in_flight) {
      for (size_t c = 0; c < clients.size(); ++c) {
        const auto& client =
            clients[(c + static_cast<size_t>(round)) % clients.size()];
        round_figures f;
        if (o.skipped(client) ||
            ((client == rep.alt_client || client == default_scheduler_client) &&
             o.skipped("georoute"))) {
          f = skipped_round(client, n, round, "skipped (--skip)");
        } else if (client == fleet_down_client && !fleet_down) {
          f = skipped_round(client, n, round, fleet_down_skip);
        } else if (client == "raw") {
          std::unique_ptr<raw_load> load;
          f = timed_round(
              o, n, em,
              [&](event_log& l) {
                load = std::make_unique<raw_load>(*raw_req, n, l);
              },
              [&] { load->stop(); });
        } else if (client == "georoute" || client == rep.alt_client ||
                   client == default_scheduler_client ||
                   client == fleet_down_client) {
          auto& engine = client == "georoute"          ? *drv
                         : client == rep.alt_client    ? *alt
                         : client == fleet_down_client ? fleet_down
                                                       : *def;
          std::unique_ptr<caller_load> load;
          f = timed_round(
              o, n, em,
              [&](event_log& l) { load = engine->start_load(read, n, l, 10s); },
              [&] { load->stop(30s); });
        } else if (client == echo_client) {
          std::unique_ptr<caller_load> load;
          f = timed_round(
              o, n, em,
              [&](event_log& l) { load = echo->start_load(read, n, l, 10s); },
              [&] { load->stop(30s); });
        } else {
          f = peer_round(peer.get(), peer_skip, o, n, round);
        }
        f.client = client;
        f.round = round;
        log("round " + std::to_string(round + 1) + " " + client + " x" +
            std::to_string(n) + ": " +
            (f.skipped.empty()
                 ? std::to_string(static_cast<long>(f.requests_per_second)) +
                       " req/s"
                 : f.skipped));
        rep.rounds_raw.push_back(f);
      }
    }
  }

  if (!o.skipped("accounting")) {
    // Counted apart from the timed rounds: the allocation counter costs a
    // little while it is on.
    for (auto n : o.in_flight) {
      if (n == 1) continue;
      log("accounting x" + std::to_string(n) + ": raw");
      std::unique_ptr<raw_load> rl;
      rep.accounting.push_back(accounting_round(
          o, "raw", n,
          [&](event_log& l) {
            rl = std::make_unique<raw_load>(*raw_req, n, l);
          },
          [&] { rl->stop(); }));
      if (!o.skipped("georoute")) {
        log("accounting x" + std::to_string(n) + ": georoute");
        std::unique_ptr<caller_load> gl;
        rep.accounting.push_back(accounting_round(
            o, "georoute", n,
            [&](event_log& l) { gl = (*drv)->start_load(read, n, l, 10s); },
            [&] { gl->stop(30s); }, [&] { return (*drv)->router_counters(); }));
        log("accounting x" + std::to_string(n) + ": " +
            default_scheduler_client);
        std::unique_ptr<caller_load> dl;
        rep.accounting.push_back(accounting_round(
            o, default_scheduler_client, n,
            [&](event_log& l) { dl = (*def)->start_load(read, n, l, 10s); },
            [&] { dl->stop(30s); }, [&] { return (*def)->router_counters(); }));
      }
      if (!o.skipped(echo_client)) {
        log("accounting x" + std::to_string(n) + ": " + echo_client);
        std::unique_ptr<caller_load> el;
        rep.accounting.push_back(accounting_round(
            o, echo_client, n,
            [&](event_log& l) { el = echo->start_load(read, n, l, 10s); },
            [&] { el->stop(30s); }));
      }
    }
  }

  if (!o.skipped("sustain") && !o.skipped("georoute") && o.sustain > 0) {
    // Both modes at the highest level, one after the other (not
    // interleaved: what is judged is each one's growth over its own run).
    for (const auto& client :
         std::vector<std::string>{"georoute", default_scheduler_client}) {
      log("sustained load, " + std::to_string(max_in_flight) + " in flight, " +
          client);
      rep.sustain.push_back(
          sustained_round(o, client, client == "georoute" ? **drv : **def, read,
                          max_in_flight));
    }
  }

  if (!o.skipped("failover")) {
    for (const auto& f : faults(em)) {
      log("failover " + f.name + " (georoute)");
      rep.failover.push_back(georoute_failover(em, f, o, 16));
      log("failover " + f.name + " (peer)");
      rep.failover.push_back(peer_failover(peer.get(), peer_skip, f, o, 16));
    }
  }

  if (!o.skipped("cold")) {
    for (auto k : o.cold) {
      log("cold start, " + std::to_string(k) + " callers");
      rep.cold.push_back((*drv)->cold_start(
          point_read("dbs/bench/colls/" + cold_name("georoute", k), doc_id,
                     doc_pk),
          k));
      rep.cold.push_back(peer_cold(peer.get(), peer_skip, k));
    }
  }
  if (!o.skipped("feed") && o.feed_documents > 0) {
    // The collection is filled through the engine (set-up, not measured),
    // then both clients drain it from the beginning, twice, alternating.
    const auto feed_link = "dbs/bench/colls/" + feed_coll;
    log("change feed: writing " + std::to_string(o.feed_documents) +
        " documents");
    std::vector<data_request> writes;
    writes.reserve(o.feed_documents);
    const std::string filler(200, 'x');
    for (size_t i = 0; i < o.feed_documents; ++i) {
      data_request w;
      w.op = data_op::upsert;
      w.collection_link = feed_link;
      auto id = "f" + std::to_string(i);
      w.body = nlohmann::json{{"id", id}, {"pk", id}, {"n", i}, {"v", filler}}
                   .dump();
      w.options.partition_key_json = nlohmann::json::array({id}).dump();
      writes.push_back(std::move(w));
    }
    auto [written, failed_writes] = (*drv)->route_many(writes, 256);
    writes.clear();
    rep.feed_documents_written = written;
    if (failed_writes > 0)
      log("change feed: " + std::to_string(failed_writes) + " writes failed");
    for (int round = 0; round < 2; ++round) {
      log("change feed drain, round " + std::to_string(round + 1) +
          ": georoute");
      auto g = (*drv)->drain_feed(feed_link, static_cast<int32_t>(o.feed_page));
      g.round = round;
      rep.feed.push_back(g);
      log("change feed drain, round " + std::to_string(round + 1) + ": peer");
      rep.feed.push_back(peer_feed(peer.get(), peer_skip, o, round));
    }
    for (const auto& f : rep.feed)
      if (f.client == "georoute" &&
          (!f.error.empty() || f.documents != written))
        failed = true;
  }
  if (!o.skipped("bulk") && o.bulk_documents > 0) {
    // Each load into an empty collection of its own: point creates and
    // bulk through georoute, executeBulkOperations through the peer; then
    // both bulk APIs again with every range held to an ops budget.
    auto link = [](const std::string& c) { return "dbs/bench/colls/" + c; };
    const auto n = o.bulk_documents;
    log("bulk: " + std::to_string(n) + " point creates, 64 in flight");
    rep.bulk.push_back((*drv)->point_load(link(bulk_colls[0]), n, 64));
    log("bulk: " + std::to_string(n) + " creates through georoute's bulk");
    rep.bulk.push_back((*drv)->bulk_load(link(bulk_colls[1]), n));
    log("bulk: " + std::to_string(n) + " creates through the peer's bulk");
    rep.bulk.push_back(peer_bulk(peer.get(), peer_skip, bulk_colls[2], n));
    for (size_t k = 3; k < 5; ++k) {
      auto budget =
          nlohmann::json{{"collection", link(bulk_colls[k])},
                         {"ops_per_second", o.bulk_budget},
                         {"burst", std::max<size_t>(1, o.bulk_budget / 10)}};
      if (auto a = em.admin("POST", "ops-budget", budget.dump()); !a)
        log("bulk: the ops budget was refused: " + a.error().what);
    }
    auto ranges = (*drv)->ranges_of(link(bulk_colls[3]));
    double allowed = static_cast<double>(o.bulk_budget * ranges);
    log("bulk under 429: " + std::to_string(o.bulk_budget) +
        " ops/s per range, " + std::to_string(ranges) + " ranges");
    auto g = (*drv)->bulk_load(link(bulk_colls[3]), n);
    g.mode = "bulk under 429";
    g.allowed_per_second = allowed;
    g.finish();
    rep.bulk.push_back(g);
    auto p = peer_bulk(peer.get(), peer_skip, bulk_colls[4], n);
    p.mode = "bulk under 429";
    p.allowed_per_second = allowed;
    p.finish();
    rep.bulk.push_back(p);
    for (const auto& b : rep.bulk)
      if (b.client == "georoute" && (!b.error.empty() || b.ok != n))
        failed = true;
  }
  peer.reset();
  drv->reset();
  alt->reset();
  def->reset();
  echo.reset();

  if (!o.skipped("memory") && o.memory_collections > 0) {
    log("memory: " + std::to_string(o.memory_collections) + " collections x " +
        std::to_string(o.memory_ranges) + " ranges");
    rep.memory = measure_memory(o.memory_collections, o.memory_ranges);
    rep.has_memory = true;
  }
  rep.total_seconds =
      std::chrono::duration<double>(steady::now() - started_at).count();
  rep.summarize();
  std::cout << render_text(rep);
  if (!o.json_file.empty()) {
    if (!write_json(rep, o.json_file)) {
      std::cerr << "georoute bench: cannot write " << o.json_file << "\n";
      failed = true;
    }
  }
  for (const auto& r : rep.rounds_raw)
    if (r.client != "peer" && r.skipped.empty() && r.ok == 0) failed = true;
  for (const auto& r : rep.sustain)
    if (r.ok == 0) failed = true;
  return failed ? 1 : 0;
}

} // namespace georoute::bench

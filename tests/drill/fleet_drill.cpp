#include "tests/drill/fleet_drill.hpp"

#include <iostream>

#ifndef GEOROUTE_HAVE_NATS

namespace georoute::drill {

namespace {
int no_nats() {
  std::cerr << "georoute: the fleet drill needs a build with libnats "
               "(apt-get install libnats-dev nats-server, then configure "
               "again)\n";
  return 2;
}
} // namespace

int run_fleet_drill(std::vector<std::string>) {
  return no_nats();
}
int run_fleet_member(std::vector<std::string>) {
  return no_nats();
}

} // namespace georoute::drill

#else

#  include "georoute/actors/engine.hpp"
#  include "georoute/actors/fleet.hpp"
#  include "georoute/actors/nats/fleet_link.hpp"
#  include "georoute/actors/policy/fleet_subject.hpp"
#  include "georoute/messages/types.hpp"
#  include "georoute/transport/auth.hpp"
#  include "georoute/transport/http_client.hpp"
#  include "georoute/transport/nats/channel.hpp"
#  include "georoute/transport/nats/nkey.hpp"
#  include "georoute/transport/nats/server_config.hpp"
#  include "tests/emulator/emulator.hpp"
#  include "tests/transport/nats/nats_server_process.hpp"
#  include "tests/transport/test_pki.hpp"

#  include <algorithm>
#  include <atomic>
#  include <caf/all.hpp>
#  include <cerrno>
#  include <chrono>
#  include <csignal>
#  include <cstdlib>
#  include <fstream>
#  include <future>
#  include <map>
#  include <mutex>
#  include <nlohmann/json.hpp>
#  include <optional>
#  include <random>
#  include <set>
#  include <sstream>
#  include <sys/stat.h>
#  include <sys/wait.h>
#  include <thread>
#  include <unistd.h>

namespace georoute::drill {

namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::nats_server_path;
using testing::nats_server_process;
using testing::test_pki;

const std::vector<std::string> regions = {"West US", "East US", "North Europe"};
constexpr int doc_count = 50;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "--name=value" flags into a map; false on anything else.
bool parse_flags(const std::vector<std::string>& args,
                 std::map<std::string, std::string>& out, std::string& bad) {
  for (const auto& a : args) {
    if (a.rfind("--", 0) != 0) {
      bad = a;
      return false;
    }
    auto eq = a.find('=');
    out[a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
        eq == std::string::npos ? "true" : a.substr(eq + 1);
  }
  return true;
}

// -- one process of the fleet ------------------------------------------------

// What a member records, as JSON lines printed at its end.
struct member_log {
  std::mutex mtx;
  std::vector<std::string> lines;
  std::atomic<int> outstanding{0};
  void add(json j) {
    std::lock_guard<std::mutex> guard{mtx};
    lines.push_back(j.dump());
  }
};

// Records every claim handed to the link (when, about what, which state).
class logging_link final : public fleet_link {
public:
  logging_link(std::shared_ptr<fleet_link> inner,
               std::shared_ptr<member_log> log)
      : inner_(std::move(inner)), log_(std::move(log)) {}
  bool publish(const std::string& subject,
               const std::string& payload) override {
    bool ok = inner_->publish(subject, payload);
    auto doc = json::parse(payload, nullptr, false);
    // georoute.h1.<fleet>.<acct>.<region>.<rid>: the fifth token.
    std::vector<std::string> tokens;
    std::stringstream ss{subject};
    for (std::string t; std::getline(ss, t, '.');)
      tokens.push_back(t);
    if (doc.is_object() && doc.contains("st") && tokens.size() == 6)
      log_->add({{"pub", wall_ms()},
                 {"region", tokens[4]},
                 {"st", doc["st"]},
                 {"ok", ok}});
    return ok;
  }
  bool connected() const override { return inner_->connected(); }

private:
  std::shared_ptr<fleet_link> inner_;
  std::shared_ptr<member_log> log_;
};

struct fm_tick {};
struct fm_stop {};

} // namespace
} // namespace georoute::drill

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::fm_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::drill::fm_stop)

namespace georoute::drill {
namespace {

// An operation's attempts, compact, for the reader of a member's lines:
// "West US +0ms 1001ms timeout arm0; East US +1001ms 2ms 200 arm1 win".
std::string attempts_text(const diagnostics& d) {
  std::string out;
  for (const auto& a : d.attempts) {
    if (!out.empty()) out += "; ";
    out += a.region + " +" + std::to_string(a.started_us / 1000) + "ms " +
           std::to_string(a.elapsed_us / 1000) + "ms " +
           (a.failure.empty() ? std::to_string(a.status) : a.failure) + " arm" +
           std::to_string(a.arm) + (a.winner ? " win" : "");
  }
  if (d.metadata_refreshes > 0)
    out += " (metadata refreshes " + std::to_string(d.metadata_refreshes) + ")";
  return out;
}

// Reads random seeded documents at a fixed rate; each answer is a line.
caf::behavior reader(caf::event_based_actor* self, router_actor router,
                     std::shared_ptr<member_log> log, caf::timespan period,
                     uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  auto stopping = std::make_shared<bool>(false);
  self->send(self, fm_tick{});
  return {
      [=](fm_tick) {
        if (*stopping) return;
        auto n = (*rng)() % doc_count;
        data_request r;
        r.op = data_op::read;
        r.collection_link = "dbs/d/colls/c";
        r.id = "doc-" + std::to_string(n);
        r.options.partition_key_json = "[\"pk-" + std::to_string(n) + "\"]";
        auto sent = wall_ms();
        ++log->outstanding;
        self->request(router, 10s, route_atom_v, std::move(r))
            .then(
                [=](data_response& resp) {
                  --log->outstanding;
                  log->add({{"r", sent},
                            {"ms", wall_ms() - sent},
                            {"first", resp.diag.attempts.empty()
                                          ? std::string{}
                                          : resp.diag.attempts.front().region},
                            {"hedges", resp.diag.hedges},
                            {"att", attempts_text(resp.diag)},
                            {"ok", true}});
                },
                [=](caf::error& e) {
                  --log->outstanding;
                  log->add({{"r", sent},
                            {"ms", wall_ms() - sent},
                            {"first", ""},
                            {"hedges", 0},
                            {"ok", false},
                            {"err", self->system().render(e)}});
                });
        self->delayed_send(self, period, fm_tick{});
      },
      [=](fm_stop) { *stopping = true; },
  };
}

// The forged reporter: valid credentials, lies about every region.
int run_forger(const std::map<std::string, std::string>& f,
               const config::settings& s) {
  nats_channel_options o;
  o.servers = s.fleet.servers;
  o.name = "georoute/" + s.fleet.reporter;
  o.nkey_public = s.fleet.nkey;
  o.nkey_seed_file = s.fleet.nkey_seed_file;
  o.ca_file = s.fleet.ca_file;
  auto ch = nats_channel::open(
      o, [](nats_inbound) {}, [](bool, std::string) {});
  if (!ch) {
    std::cerr << "forger: " << ch.error().what << "\n";
    return 1;
  }
  auto acct = fleet_account_token(s);
  auto victim = f.count("victim") ? f.at("victim") : std::string{"p01"};
  auto until = std::chrono::steady_clock::now() +
               std::chrono::seconds{std::stoi(f.at("seconds"))};
  uint64_t seq = 0;
  int tick = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (const auto& r : regions) {
      json claim = {
          {"v", 1},
          {"ep", "0123456789abcdef"},
          {"sq", ++seq},
          {"ts", wall_ms()},
          {"st", "down"},
          {"sc", "read"},
          {"ev",
           {{"to", 3}, {"er", 0}, {"ok", 0}, {"oko", 40}, {"win", 10000}}},
          {"lh", 0},
          {"ttl", 15000}};
      (*ch)->publish(fleet_subject(s.fleet.fleet, acct, r, s.fleet.reporter),
                     claim.dump());
      // Once a second: the same claim under another reporter's name.
      if (tick % 100 == 0)
        (*ch)->publish(fleet_subject(s.fleet.fleet, acct, r, victim),
                       claim.dump());
    }
    ++tick;
    std::this_thread::sleep_for(10ms); // ~100 claims a second per region
  }
  auto c = (*ch)->counters();
  std::cout << json{{"forger", true},
                    {"published", c.published},
                    {"permission_errors", c.permission_errors}}
                   .dump()
            << "\n";
  return 0;
}

} // namespace

int run_fleet_member(std::vector<std::string> args) {
  std::map<std::string, std::string> f;
  std::string bad;
  if (!parse_flags(args, f, bad)) {
    std::cerr << "fleet-member: unknown argument " << bad << "\n";
    return 2;
  }
  for (const char* need : {"endpoint", "rid", "seconds"})
    if (!f.count(need)) {
      std::cerr << "fleet-member: --" << need << " is required\n";
      return 2;
    }
  const char* key = std::getenv("GEOROUTE_ACCOUNT_KEY");
  config::settings s;
  s.account_endpoint = f["endpoint"];
  s.account_key = config::secret{key ? key : ""};
  s.location.preferred_regions = regions;
  bool sharing = f["sharing"] == "on";
  s.fleet.enabled = sharing || f.count("forge");
  s.fleet.servers = {f["server"]};
  s.fleet.fleet = f.count("fleet") ? f["fleet"] : "drill";
  s.fleet.reporter = f["rid"];
  s.fleet.nkey = f["nkey"];
  s.fleet.nkey_seed_file = f["seed-file"];
  s.fleet.ca_file = f["ca-file"];
  if (f.count("forge")) return run_forger(f, s);

  auto log = std::make_shared<member_log>();
  log->add({{"start", wall_ms()}});
  caf::actor_system_config cfg;
  register_types(cfg);
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  engine_options eo;
  // Every event of the engine (they are few): the report reads the fleet
  // verdicts and marks; the rest is for the reader of a member's lines.
  eo.log = [log](const log_record& r) {
    log->add({{"ev", r.event}, {"at", wall_ms()}, {"text", r.message}});
  };
  std::optional<nats_fleet> nf;
  if (sharing) {
    auto made = make_nats_fleet_link(s);
    if (!made) {
      std::cerr << "fleet-member: " << made.error().what << "\n";
      return 1;
    }
    nf = std::move(*made);
    eo.fleet = std::make_shared<logging_link>(nf->link, log);
    eo.inbox = nf->inbox;
  }
  auto started = engine::start(sys, s, eo);
  if (!started) {
    std::cerr << "fleet-member: " << sys.render(started.error()) << "\n";
    return 1;
  }
  auto& eng = *started;
  double rate = f.count("rate") ? std::stod(f["rate"]) : 10.0;
  auto period = std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>{1.0 / rate});
  auto driver = sys.spawn(reader, eng.router(), log, period,
                          std::hash<std::string>{}(f["rid"]));
  std::this_thread::sleep_for(std::chrono::seconds{std::stoi(f["seconds"])});
  caf::anon_send(driver, fm_stop{});
  for (int i = 0; i < 1100 && log->outstanding.load() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  if (sharing) {
    caf::scoped_actor self{sys};
    self->request(eng.fleet(), 5s, stats_atom_v)
        .receive(
            [&](fleet_stats& st) {
              log->add({{"stats", true},
                        {"published", st.published},
                        {"received", st.received},
                        {"flooded", st.health.dropped_flooded},
                        {"accepted", st.health.accepted},
                        {"verdicts", st.health.verdicts_applied},
                        {"vetoed", st.health.verdicts_vetoed},
                        {"probes", st.probes},
                        {"probes_ok", st.probes_ok},
                        {"lh", st.local_health},
                        {"withheld_unhealthy", st.report.withheld_unhealthy},
                        {"withheld_many", st.report.withheld_many}});
            },
            [&](caf::error&) {});
  }
  caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
  eng.stop();
  {
    std::lock_guard<std::mutex> guard{log->mtx};
    for (const auto& l : log->lines)
      std::cout << l << "\n";
  }
  std::cout.flush();
  nf.reset(); // closes the connection (after the engine stopped)
  return 0;
}

// -- the drill
// -----------------------------------------------------------------

namespace {

// One child process; its stdout goes to a file, read after it exits.
struct child {
  pid_t pid = -1;
  std::string rid;
  std::string out;
  bool late = false;
};

child spawn_member(const std::string& self_exe, const std::string& dir,
                   const std::string& rid, std::vector<std::string> args,
                   const std::string& key) {
  child c;
  c.rid = rid;
  c.out = dir + "/" + rid + "-" + std::to_string(wall_ms()) + ".jsonl";
  std::vector<std::string> argv_s = {self_exe, "fleet-member", "--rid=" + rid};
  for (auto& a : args)
    argv_s.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string env_key = "GEOROUTE_ACCOUNT_KEY=" + key;
  int fd = ::open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  auto parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fd, 1);
    ::putenv(env_key.data());
    ::setenv("GEOROUTE_ENGINE_LOOP", "0", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  c.pid = pid;
  return c;
}

std::vector<json> wait_and_read(child& c) {
  int status = 0;
  if (c.pid > 0) ::waitpid(c.pid, &status, 0);
  c.pid = -1;
  std::vector<json> out;
  std::ifstream in{c.out};
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  auto i = static_cast<size_t>(p * static_cast<double>(xs.size() - 1));
  return xs[i];
}

// "p01" .. "p08".
std::string rid_of(int i) {
  return (i < 10 ? "p0" : "p") + std::to_string(i);
}

struct criterion_row {
  std::string what;
  std::string measured;
  bool passed = false;
};

struct fleet_world {
  std::string exe, dir, key, endpoint, ca, fleet;
  std::string out_dir; // the members' lines: `dir`, or --keep=DIR's
  std::string phase;   // the members' line files go in out_dir/phase

  std::string phase_dir() const {
    auto d = out_dir + "/" + phase;
    ::mkdir(d.c_str(), 0700);
    return d;
  }
  std::unique_ptr<emulator::emulator> emu;
  std::unique_ptr<nats_server_process> server;
  std::map<std::string, std::pair<std::string, std::string>> creds; // rid->
  int rate = 10;

  std::vector<std::string> member_args(const std::string& rid, bool sharing,
                                       int seconds) {
    return {"--endpoint=" + endpoint,
            "--seconds=" + std::to_string(seconds),
            "--rate=" + std::to_string(rate),
            "--sharing=" + std::string{sharing ? "on" : "off"},
            "--server=" + server->url(),
            "--fleet=" + fleet,
            "--nkey=" + creds[rid].first,
            "--seed-file=" + creds[rid].second,
            "--ca-file=" + ca};
  }
};

// What a member's lines say, for the hang scenario.
struct member_view {
  std::string rid;
  bool late = false;
  std::vector<json> reads;
  std::optional<int64_t> demoted_at; // West US, first
  std::optional<int64_t> restored_at;
  std::optional<int64_t> first_down_pub; // its first "down" about West US
  int64_t start = 0;
  json stats;
};

member_view view_of(const child& c, const std::vector<json>& lines) {
  member_view v;
  v.rid = c.rid;
  v.late = c.late;
  for (const auto& j : lines) {
    if (j.contains("r")) {
      v.reads.push_back(j);
    } else if (j.contains("ev")) {
      auto text = j["text"].get<std::string>();
      if (text.rfind("West US", 0) != 0) continue;
      if (j["ev"] == "region.fleet_demoted" && !v.demoted_at)
        v.demoted_at = j["at"].get<int64_t>();
      if (j["ev"] == "region.fleet_restored")
        v.restored_at = j["at"].get<int64_t>();
    } else if (j.contains("pub")) {
      if (j["region"] == "westus" && j["st"] == "down" && !v.first_down_pub &&
          j["ok"].get<bool>())
        v.first_down_pub = j["pub"].get<int64_t>();
    } else if (j.contains("stats")) {
      v.stats = j;
    } else if (j.contains("start")) {
      v.start = j["start"].get<int64_t>();
    }
  }
  return v;
}

struct hang_result {
  int waits_total = 0;  // reads after the hang whose first try was West
  int waits_before = 0; // ... before the verdict reached the process
  int waits_after = 0;  // ... after it
  int waits_late = 0;   // ... of processes started during the hang
  int failed = 0;       // reads that failed (caller timeout, error)
  std::map<std::string, int> errors; // failed reads by their error's text
  int64_t all_avoid_ms = -1;       // the last first try to West after the hang
  std::vector<double> delivery_ms; // k-th claim -> applied, per process
                                   // that ran when the k-th claim went
  std::vector<double> late_ready_ms; // a late starter: start -> verdict
  int demoted = 0, restored = 0, restored_before_heal = 0;
  std::vector<double> baseline_ms; // reads before the hang
  std::vector<double> restore_after_heal_ms;
};

hang_result run_hang(fleet_world& w, int n, bool sharing) {
  hang_result r;
  w.phase = sharing ? "hang-on" : "hang-off";
  std::vector<child> kids;
  auto t0 = wall_ms();
  int early = n / 2;
  for (int i = 0; i < early; ++i) {
    auto rid = rid_of(i + 1);
    kids.push_back(spawn_member(w.exe, w.phase_dir(), rid,
                                w.member_args(rid, sharing, 43), w.key));
  }
  std::this_thread::sleep_for(8s);
  w.emu->set_region_state("West US", emulator::region_state::hang);
  auto hang_at = wall_ms();
  std::this_thread::sleep_for(5s);
  for (int i = early; i < n; ++i) {
    auto rid = rid_of(i + 1);
    auto c = spawn_member(w.exe, w.phase_dir(), rid,
                          w.member_args(rid, sharing, 30), w.key);
    c.late = true;
    kids.push_back(c);
  }
  std::this_thread::sleep_for(15s);
  w.emu->set_region_state("West US", emulator::region_state::online);
  auto heal_at = wall_ms();
  std::vector<member_view> views;
  for (auto& c : kids)
    views.push_back(view_of(c, wait_and_read(c)));
  (void)t0;
  for (const auto& v : views) {
    for (const auto& rd : v.reads) {
      auto sent = rd["r"].get<int64_t>();
      if (!rd["ok"].get<bool>()) {
        ++r.failed;
        ++r.errors[rd.value("err", std::string{"(not recorded)"})];
      }
      if (sent < hang_at) {
        if (rd["ok"].get<bool>())
          r.baseline_ms.push_back(rd["ms"].get<double>());
        continue;
      }
      if (sent >= heal_at) continue;
      bool west_first = rd["first"] == "West US" || !rd["ok"].get<bool>();
      if (!west_first) continue;
      ++r.waits_total;
      if (v.late) ++r.waits_late;
      if (v.demoted_at && sent >= *v.demoted_at)
        ++r.waits_after;
      else
        ++r.waits_before;
      r.all_avoid_ms = std::max(r.all_avoid_ms, sent - hang_at);
    }
    if (v.demoted_at) {
      ++r.demoted;
      // The k-th (second) distinct reporter's first claim: its own counts.
      std::vector<int64_t> pubs;
      for (const auto& o : views)
        if (o.first_down_pub) pubs.push_back(*o.first_down_pub);
      std::sort(pubs.begin(), pubs.end());
      if (pubs.size() >= 2 && v.start <= pubs[1] && *v.demoted_at >= pubs[1])
        r.delivery_ms.push_back(static_cast<double>(*v.demoted_at - pubs[1]));
      else if (v.start > 0 && v.late)
        r.late_ready_ms.push_back(static_cast<double>(*v.demoted_at - v.start));
    }
    if (v.restored_at) {
      ++r.restored;
      if (*v.restored_at < heal_at) ++r.restored_before_heal;
      r.restore_after_heal_ms.push_back(
          static_cast<double>(*v.restored_at - heal_at));
    }
  }
  return r;
}

// Runs `n` members with sharing on and all regions healthy while `during`
// acts on the run; returns every member's lines.
std::vector<member_view>
run_healthy(fleet_world& w, const std::string& phase, int n, int seconds,
            const std::function<void(std::vector<child>&)>& during,
            const std::function<void(fleet_world&, std::vector<child>&)>&
                extra_children = {}) {
  w.phase = phase;
  std::vector<child> kids;
  for (int i = 0; i < n; ++i) {
    auto rid = rid_of(i + 1);
    kids.push_back(spawn_member(w.exe, w.phase_dir(), rid,
                                w.member_args(rid, true, seconds), w.key));
  }
  if (extra_children) extra_children(w, kids);
  during(kids);
  std::vector<member_view> views;
  for (auto& c : kids)
    views.push_back(view_of(c, wait_and_read(c)));
  return views;
}

std::string fmt(double v, int prec = 0) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << v;
  return os.str();
}

} // namespace

int run_fleet_drill(std::vector<std::string> args) {
  std::map<std::string, std::string> f;
  std::string bad;
  if (!parse_flags(args, f, bad)) {
    std::cerr << "georoute drill --fleet: unknown argument " << bad << "\n";
    return 2;
  }
  int n = f.count("processes") ? std::atoi(f["processes"].c_str()) : 8;
  if (n < 4 || n > 8) {
    std::cerr << "georoute drill --fleet: --processes must be 4 to 8\n";
    return 2;
  }
  if (nats_server_path().empty()) {
    std::cerr << "georoute drill --fleet: nats-server not found (apt-get "
                 "install nats-server)\n";
    return 2;
  }
  fleet_world w;
  if (f.count("rate")) w.rate = std::max(1, std::atoi(f["rate"].c_str()));
  char exe[4096];
  auto len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return 1;
  w.exe.assign(exe, static_cast<size_t>(len));
  test_pki pki;
  w.dir = pki.dir();
  w.out_dir = w.dir;
  if (f.count("keep")) {
    // Each member's lines (reads with their attempts, the engine's events)
    // stay in DIR, one file per member and phase, for the reader.
    w.out_dir = f["keep"];
    if (::mkdir(w.out_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      std::cerr << "georoute drill --fleet: --keep=" << w.out_dir
                << ": cannot create it\n";
      return 2;
    }
  }
  w.ca = pki.ca_cert;
  w.fleet = "drill" + std::to_string(::getpid());
  // One NKey per process, and the forger's.
  std::vector<nats_fleet_user> users;
  std::vector<std::string> rids;
  for (int i = 1; i <= n; ++i) {
    auto rid = rid_of(i);
    rids.push_back(rid);
  }
  rids.push_back("forger");
  for (const auto& rid : rids) {
    auto k = generate_user_nkey();
    if (!k) {
      std::cerr << "nkey: " << k.error().what << "\n";
      return 1;
    }
    auto file = w.dir + "/" + rid + ".nk";
    if (auto p = write_nkey_seed_file(file, k->seed)) {
      std::cerr << p->what << "\n";
      return 1;
    }
    w.creds[rid] = {k->public_key, file};
    users.push_back({rid, k->public_key});
  }
  nats_server_config_options so;
  so.fleet = w.fleet;
  so.tls_cert_file = pki.server_cert;
  so.tls_key_file = pki.server_key;
  so.users = users;
  w.server = std::make_unique<nats_server_process>(w.dir, [so](int port) {
    auto o = so;
    o.port = port;
    auto text = nats_server_config(o);
    return text ? *text : std::string{};
  });
  if (!w.server->start()) {
    std::cerr << "nats-server: " << w.server->error() << "\n";
    return 1;
  }
  // The emulator, its collection and documents.
  emulator::emulator_options eo;
  eo.engine.regions = regions;
  auto emu = emulator::emulator::start(eo);
  if (!emu) {
    std::cerr << "emulator: " << emu.error().what << "\n";
    return 1;
  }
  w.emu = std::move(*emu);
  w.key = w.emu->key();
  w.endpoint = w.emu->global_endpoint();
  {
    auto key = transport::parse_master_key(w.key);
    transport::http_client c{transport::http_client_options{}};
    auto send = [&](const std::string& target, const std::string& body,
                    const std::string& pk) {
      transport::request r;
      r.method = "POST";
      r.endpoint = w.endpoint;
      r.target = target;
      r.body = body;
      r.headers = {{"content-type", "application/json"}};
      if (!pk.empty())
        r.headers.emplace_back("x-ms-documentdb-partitionkey", pk);
      r.timeout = 10s;
      transport::sign_request(r, *key, std::chrono::system_clock::now());
      std::promise<transport::outcome> p;
      auto fut = p.get_future();
      c.send(std::move(r),
             [&p](transport::outcome o) { p.set_value(std::move(o)); });
      return fut.get().status;
    };
    if (send("/dbs", R"({"id":"d"})", "") != 201 ||
        send(
            "/dbs/d/colls",
            R"({"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}})",
            "") != 201) {
      std::cerr << "emulator: creating the collection failed\n";
      return 1;
    }
    for (int i = 0; i < doc_count; ++i) {
      auto id = std::to_string(i);
      if (send("/dbs/d/colls/c/docs",
               json{{"id", "doc-" + id}, {"pk", "pk-" + id}}.dump(),
               "[\"pk-" + id + "\"]") != 201) {
        std::cerr << "emulator: seeding failed\n";
        return 1;
      }
    }
  }
  std::cout << "georoute fleet drill: " << n << " processes, " << w.rate
            << " reads/s each, 3 regions, nats-server " << w.server->url()
            << " (TLS, one NKey user per process), library defaults (hedge "
               "threshold 1s, k = 2)\n";
  std::vector<criterion_row> rows;
  json report;

  // -- hang, sharing off and on --------------------------------------------
  std::cout << "hang: sharing off ...\n" << std::flush;
  auto off = run_hang(w, n, false);
  std::cout << "hang: sharing on ...\n" << std::flush;
  auto on = run_hang(w, n, true);
  auto hang_json = [&](const hang_result& h) {
    return json{
        {"threshold_waits", h.waits_total},
        {"waits_before_verdict", h.waits_before},
        {"waits_after_verdict", h.waits_after},
        {"waits_late_starters", h.waits_late},
        {"failed_reads", h.failed},
        {"all_avoid_ms", h.all_avoid_ms},
        {"processes_demoted", h.demoted},
        {"delivery_p50_ms", percentile(h.delivery_ms, 0.5)},
        {"delivery_max_ms", percentile(h.delivery_ms, 1.0)},
        {"delivery_ms", h.delivery_ms},
        {"late_start_to_verdict_ms", h.late_ready_ms},
        {"restored", h.restored},
        {"restored_before_heal", h.restored_before_heal},
        {"restore_after_heal_max_ms", percentile(h.restore_after_heal_ms, 1.0)},
        {"baseline_p50_ms", percentile(h.baseline_ms, 0.5)},
        {"baseline_p99_ms", percentile(h.baseline_ms, 0.99)}};
  };
  report["hang"] = {{"off", hang_json(off)}, {"on", hang_json(on)}};
  std::cout << "\n                               sharing off   sharing on\n";
  auto line = [](const std::string& what, const std::string& a,
                 const std::string& b) {
    std::printf("  %-28s %11s %12s\n", what.c_str(), a.c_str(), b.c_str());
  };
  line("threshold waits (fleet)", std::to_string(off.waits_total),
       std::to_string(on.waits_total));
  line("  before the verdict", std::to_string(off.waits_before),
       std::to_string(on.waits_before));
  line("  after the verdict", "-", std::to_string(on.waits_after));
  line("  of late starters", std::to_string(off.waits_late),
       std::to_string(on.waits_late));
  line("failed reads", std::to_string(off.failed), std::to_string(on.failed));
  auto print_errors = [](const char* which, const hang_result& h) {
    for (const auto& [text, count] : h.errors)
      std::printf("    %s: %d x %s\n", which, count, text.c_str());
  };
  print_errors("off", off);
  print_errors("on", on);
  line("all avoid West US after (ms)", std::to_string(off.all_avoid_ms),
       std::to_string(on.all_avoid_ms));
  line("processes demoting West US", std::to_string(off.demoted),
       std::to_string(on.demoted));
  line("delivery p50 / max (ms)", "-",
       fmt(percentile(on.delivery_ms, 0.5)) + " / " +
           fmt(percentile(on.delivery_ms, 1.0)));
  line("late starter: start->verdict", "-",
       fmt(percentile(on.late_ready_ms, 0.5)) + " / " +
           fmt(percentile(on.late_ready_ms, 1.0)));
  line("restored / before heal", "-",
       std::to_string(on.restored) + " / " +
           std::to_string(on.restored_before_heal));
  line("restore after heal max (ms)", "-",
       fmt(percentile(on.restore_after_heal_ms, 1.0)));
  rows.push_back({"late starters pay 0 threshold waits (sharing on)",
                  std::to_string(on.waits_late), on.waits_late == 0});
  rows.push_back({"waits after a verdict reached a process <= 1 per process",
                  std::to_string(on.waits_after), on.waits_after <= n});
  rows.push_back(
      {"fleet-wide waits with sharing on <= 1/3 of sharing off",
       std::to_string(on.waits_total) + " vs " +
           std::to_string(off.waits_total),
       off.waits_total > 0 && 3 * on.waits_total <= off.waits_total});
  auto delivery_max = percentile(on.delivery_ms, 1.0);
  rows.push_back({"a verdict reaches every running process within 250 ms "
                  "of the k-th report",
                  fmt(delivery_max) + " ms (" +
                      std::to_string(on.delivery_ms.size()) + " processes)",
                  !on.delivery_ms.empty() && delivery_max <= 250});
  rows.push_back({"fail-back only after the heal (each process's own probe)",
                  std::to_string(on.restored) + " restored, " +
                      std::to_string(on.restored_before_heal) +
                      " before the heal",
                  on.restored_before_heal == 0 && on.restored == on.demoted});

  // -- one starved process ------------------------------------------------
  std::cout << "starved: one process stopped 900 ms of every second ...\n"
            << std::flush;
  int healthy_n = std::max(4, n / 2);
  auto starved =
      run_healthy(w, "starved", healthy_n, 25, [&](std::vector<child>& kids) {
        std::this_thread::sleep_for(5s);
        auto pid = kids.front().pid;
        for (int i = 0; i < 15; ++i) {
          ::kill(pid, SIGSTOP);
          std::this_thread::sleep_for(900ms);
          ::kill(pid, SIGCONT);
          std::this_thread::sleep_for(100ms);
        }
      });
  int starved_demotions = 0, starved_claims = 0;
  for (size_t i = 0; i < starved.size(); ++i) {
    if (i == 0 && !starved[i].stats.is_null())
      starved_claims = starved[i].stats.value("published", 0);
    if (i > 0 && starved[i].demoted_at) ++starved_demotions;
  }
  rows.push_back({"one CPU-starved process: 0 demotions elsewhere",
                  std::to_string(starved_demotions) + " (it published " +
                      std::to_string(starved_claims) + " messages)",
                  starved_demotions == 0});
  report["starved"] = {{"demotions", starved_demotions},
                       {"published_by_starved", starved_claims}};

  // -- one forged reporter ------------------------------------------------
  std::cout << "forged: a reporter with valid credentials lies ...\n"
            << std::flush;
  child forger;
  auto forged = run_healthy(
      w, "forged", healthy_n, 20, [&](std::vector<child>&) {},
      [&](fleet_world& ww, std::vector<child>&) {
        auto a = ww.member_args("forger", true, 15);
        a.push_back("--forge");
        forger = spawn_member(ww.exe, ww.phase_dir(), "forger", a, ww.key);
      });
  auto forger_lines = wait_and_read(forger);
  uint64_t permission_errors = 0, forged_published = 0;
  for (const auto& j : forger_lines)
    if (j.contains("forger")) {
      permission_errors = j.value("permission_errors", uint64_t{0});
      forged_published = j.value("published", uint64_t{0});
    }
  int forged_demotions = 0;
  uint64_t flooded = 0;
  for (const auto& v : forged) {
    if (v.demoted_at) ++forged_demotions;
    if (!v.stats.is_null()) flooded += v.stats.value("flooded", uint64_t{0});
  }
  rows.push_back({"one forged reporter: 0 demotions",
                  std::to_string(forged_demotions) + " (" +
                      std::to_string(forged_published) + " claims sent, " +
                      std::to_string(flooded) + " dropped as a flood)",
                  forged_demotions == 0 && flooded > 0});
  rows.push_back({"publishing on another reporter's subject is refused",
                  std::to_string(permission_errors) + " permission errors",
                  permission_errors > 0});
  report["forged"] = {{"demotions", forged_demotions},
                      {"claims_sent", forged_published},
                      {"dropped_flooded", flooded},
                      {"permission_errors", permission_errors}};

  // -- the channel fails
  // -------------------------------------------------------
  std::cout << "channel: nats-server stopped 8 s, then killed ...\n"
            << std::flush;
  auto chan =
      run_healthy(w, "channel", healthy_n, 25, [&](std::vector<child>&) {
        std::this_thread::sleep_for(6s);
        w.server->pause();
        std::this_thread::sleep_for(8s);
        w.server->resume();
        std::this_thread::sleep_for(4s);
        w.server->kill();
      });
  std::vector<double> chan_ms;
  int chan_failed = 0, chan_lines = 0;
  for (const auto& v : chan) {
    for (const auto& rd : v.reads) {
      if (rd["ok"].get<bool>())
        chan_ms.push_back(rd["ms"].get<double>());
      else
        ++chan_failed;
    }
    if (!v.stats.is_null()) ++chan_lines;
  }
  auto base99 = percentile(off.baseline_ms, 0.99);
  auto chan99 = percentile(chan_ms, 0.99);
  rows.push_back({"server stopped then killed: reads as without sharing",
                  "p50 " + fmt(percentile(chan_ms, 0.5)) + " ms, p99 " +
                      fmt(chan99) + " ms (sharing off before the hang: p50 " +
                      fmt(percentile(off.baseline_ms, 0.5)) + ", p99 " +
                      fmt(base99) + "), " + std::to_string(chan_failed) +
                      " failed, " + std::to_string(chan_lines) + "/" +
                      std::to_string(chan.size()) + " processes ended cleanly",
                  chan_failed == 0 && chan99 <= 2 * base99 + 20 &&
                      chan_lines == static_cast<int>(chan.size())});
  report["channel"] = {{"p50_ms", percentile(chan_ms, 0.5)},
                       {"p99_ms", chan99},
                       {"failed", chan_failed}};

  // -- verdict -------------------------------------------------------------
  bool all = true;
  std::cout << "\ncriteria\n";
  json crit = json::array();
  for (const auto& r : rows) {
    all = all && r.passed;
    std::cout << "  " << (r.passed ? "PASS " : "FAIL ") << r.what << ": "
              << r.measured << "\n";
    crit.push_back(
        {{"what", r.what}, {"measured", r.measured}, {"passed", r.passed}});
  }
  report["criteria"] = crit;
  report["passed"] = all;
  if (f.count("json")) std::ofstream{f["json"]} << report.dump(2) << "\n";
  std::cout << (all ? "PASS" : "FAIL") << "\n";
  return all ? 0 : 1;
}

} // namespace georoute::drill

#endif

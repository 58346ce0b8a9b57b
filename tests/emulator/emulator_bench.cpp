// georoute_emulator_bench: how many signed point reads per second the
// emulator serves over keep-alive connections, so that benchmarks of the
// router know the emulator is not their bottleneck.
//
//   georoute_emulator_bench [--connections=16] [--in-flight=N]
//                           [--warmup-ms=500] [--duration-ms=3000]
//                           [--server-io-threads=1] [--client-io-threads=1]
//                           [--endpoint=http://127.0.0.1:4300/ --key=BASE64]
//                           [--client=http_client|raw]
//
// Without --endpoint it starts an emulator in-process (one region). With it,
// it talks to a running emulator's global endpoint and reads in the first
// write region. It creates db `bench`, collection `c` and document `x`, then
// keeps `in-flight` reads of `x` going through transport::http_client with
// `connections` keep-alive connections. The request is signed once: the
// signature stays valid for 15 minutes.
//
// --client=raw replaces transport::http_client by a minimal Beast loop (one
// request in flight per connection, `connections` connections), to see what
// the emulator alone can serve; the default measures through the client the
// router uses.

#include "tests/emulator/emulator.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

namespace {

using namespace georoute;
using steady = std::chrono::steady_clock;

struct bench_options {
  size_t connections = 16;
  size_t in_flight = 0; ///< 0 = connections
  int64_t warmup_ms = 500;
  int64_t duration_ms = 3000;
  size_t server_io_threads = 1;
  size_t client_io_threads = 1;
  std::string endpoint;
  std::string key = emulator::default_master_key;
  bool raw = false;
};

constexpr const char* usage =
    "usage: georoute_emulator_bench [--connections=16] [--in-flight=N]\n"
    "  [--warmup-ms=500] [--duration-ms=3000] [--server-io-threads=1]\n"
    "  [--client-io-threads=1] [--endpoint=GLOBAL_URL --key=BASE64]\n"
    "  [--client=http_client|raw]\n";

bool parse_size(const std::string& text, int64_t max, int64_t& out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
      v < 0 || v > max)
    return false;
  out = v;
  return true;
}

bool parse_args(int argc, char** argv, bench_options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    int64_t n = 0;
    auto number = [&](int64_t min, int64_t max) {
      if (!parse_size(value, max, n) || n < min) {
        std::cerr << "georoute_emulator_bench: invalid value '" << value
                  << "' for " << flag << ": expected an integer in " << min
                  << ".." << max << "\n";
        return false;
      }
      return true;
    };
    if (flag == "--help") {
      std::cout << usage;
      std::exit(0);
    } else if (flag == "--connections") {
      if (!number(1, 1024)) return false;
      o.connections = static_cast<size_t>(n);
    } else if (flag == "--in-flight") {
      if (!number(1, 65536)) return false;
      o.in_flight = static_cast<size_t>(n);
    } else if (flag == "--warmup-ms") {
      if (!number(0, 600000)) return false;
      o.warmup_ms = n;
    } else if (flag == "--duration-ms") {
      if (!number(1, 600000)) return false;
      o.duration_ms = n;
    } else if (flag == "--server-io-threads") {
      if (!number(1, 64)) return false;
      o.server_io_threads = static_cast<size_t>(n);
    } else if (flag == "--client-io-threads") {
      if (!number(1, 64)) return false;
      o.client_io_threads = static_cast<size_t>(n);
    } else if (flag == "--endpoint") {
      o.endpoint = value;
    } else if (flag == "--key") {
      o.key = value;
    } else if (flag == "--client") {
      if (value != "raw" && value != "http_client") {
        std::cerr << "georoute_emulator_bench: invalid value '" << value
                  << "' for --client: expected http_client or raw\n";
        return false;
      }
      o.raw = value == "raw";
    } else {
      std::cerr << "georoute_emulator_bench: unknown flag '" << flag << "'\n"
                << usage;
      return false;
    }
  }
  if (o.in_flight == 0) o.in_flight = o.connections;
  return true;
}

/// One blocking request through the client (set-up only).
transport::outcome call(transport::http_client& client, transport::request r,
                        const transport::master_key& key) {
  transport::sign_request(r, key, std::chrono::system_clock::now());
  std::promise<transport::outcome> p;
  auto f = p.get_future();
  client.send(std::move(r),
              [&p](transport::outcome o) { p.set_value(std::move(o)); });
  return f.get();
}

transport::request make(std::string method, const std::string& endpoint,
                        std::string target, std::string body = {}) {
  transport::request r;
  r.method = std::move(method);
  r.endpoint = endpoint;
  r.target = std::move(target);
  r.body = std::move(body);
  r.timeout = std::chrono::seconds{10};
  if (!r.body.empty())
    r.headers.emplace_back("content-type", "application/json");
  return r;
}

bool expect(const transport::outcome& o, std::initializer_list<int> ok,
            const char* what) {
  if (o.error == transport::failure::none &&
      std::find(ok.begin(), ok.end(), o.status) != ok.end())
    return true;
  std::cerr << "georoute_emulator_bench: " << what << " failed: "
            << (o.error != transport::failure::none
                    ? std::string{transport::to_string(o.error)} + " " +
                          o.error_detail
                    : "status " + std::to_string(o.status) + " " + o.body)
            << "\n";
  return false;
}

/// What a load loop measured while `measuring` was set.
struct tally {
  std::atomic<bool> measuring{false};
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<size_t> active{0};
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<uint32_t> latencies_us; ///< of reads completed while measuring

  /// Records one finished read; false when the chain must stop.
  bool record(bool good, steady::time_point start) {
    if (measuring.load(std::memory_order_relaxed)) {
      if (good) {
        completed.fetch_add(1, std::memory_order_relaxed);
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      steady::now() - start)
                      .count();
        std::lock_guard<std::mutex> guard{mtx};
        latencies_us.push_back(static_cast<uint32_t>(us));
      } else {
        failed.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!stopping.load()) return true;
    std::lock_guard<std::mutex> guard{mtx};
    if (--active == 0) cv.notify_all();
    return false;
  }
};

/// The load loop: `in_flight` chains of read -> read -> ...
struct load {
  transport::http_client& client;
  transport::request req;
  tally& t;

  void issue() {
    auto start = steady::now();
    client.send(req, [this, start](transport::outcome o) {
      bool good = o.error == transport::failure::none && o.status == 200;
      if (t.record(good, start)) issue();
    });
  }
};

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

/// --client=raw: one keep-alive socket, one request in flight, forever.
class raw_conn : public std::enable_shared_from_this<raw_conn> {
public:
  raw_conn(net::io_context& ioc, const http::request<http::empty_body>& req,
           tally& t)
      : sock_(net::make_strand(ioc)), req_(req), t_(t) {}

  void start(const net::ip::tcp::endpoint& ep) {
    sock_.async_connect(ep, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        std::cerr << "georoute_emulator_bench: connect: " << ec.message()
                  << "\n";
        self->t_.stopping = true;
        self->t_.record(false, steady::now());
        return;
      }
      self->sock_.set_option(net::ip::tcp::no_delay(true), ec);
      self->write();
    });
  }

private:
  void write() {
    start_ = steady::now();
    http::async_write(
        sock_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->done(false);
          self->res_ = {};
          http::async_read(self->sock_, self->buf_, self->res_,
                           [self](beast::error_code ec, size_t) {
                             self->done(!ec && self->res_.result_int() == 200);
                           });
        });
  }

  void done(bool good) {
    if (t_.record(good, start_) && good) return write();
    if (!good && !t_.stopping) { // a broken connection ends its chain
      std::lock_guard<std::mutex> guard{t_.mtx};
      if (--t_.active == 0) t_.cv.notify_all();
    }
  }

  net::ip::tcp::socket sock_;
  const http::request<http::empty_body>& req_;
  tally& t_;
  beast::flat_buffer buf_;
  http::response<http::string_body> res_;
  steady::time_point start_;
};

/// CPU seconds used so far by this process's threads named `name` (the
/// emulator names its io threads "emulator-io").
double thread_cpu_seconds(const std::string& name) {
  double total = 0;
  auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 0;
  while (auto* e = readdir(dir)) {
    std::string tid = e->d_name;
    if (tid == "." || tid == "..") continue;
    std::ifstream comm{"/proc/self/task/" + tid + "/comm"};
    std::string c;
    std::getline(comm, c);
    if (c != name) continue;
    std::ifstream stat{"/proc/self/task/" + tid + "/stat"};
    std::string line;
    std::getline(stat, line);
    // Fields after the ")" that ends the name: state is field 3, utime 14,
    // stime 15.
    std::istringstream in{line.substr(line.rfind(')') + 2)};
    std::string field;
    double utime = 0;
    double stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / ticks;
  }
  closedir(dir);
  return total;
}

} // namespace

int main(int argc, char** argv) {
  bench_options o;
  if (!parse_args(argc, argv, o)) return 2;
  auto key = transport::parse_master_key(o.key);
  if (!key) {
    std::cerr << "georoute_emulator_bench: --key: " << key.error().what << "\n";
    return 2;
  }

  std::unique_ptr<emulator::emulator> emu;
  std::string global = o.endpoint;
  if (global.empty()) {
    emulator::emulator_options eo;
    eo.engine.regions = {"West US"};
    eo.engine.master_key = o.key;
    eo.io_threads = o.server_io_threads;
    auto started = emulator::emulator::start(eo);
    if (!started) {
      std::cerr << "georoute_emulator_bench: " << started.error().what << "\n";
      return 1;
    }
    emu = std::move(*started);
    global = emu->global_endpoint();
  }

  transport::http_client_options co;
  co.max_connections_per_endpoint = o.connections;
  co.io_threads = o.client_io_threads;
  transport::http_client client{co};

  auto account = call(client, make("GET", global, "/"), *key);
  if (!expect(account, {200}, "GET / (account)")) return 1;
  auto doc = nlohmann::json::parse(account.body, nullptr, false);
  std::string region_url;
  if (doc.is_object() && doc.contains("writableLocations") &&
      doc["writableLocations"].is_array() && !doc["writableLocations"].empty())
    region_url =
        doc["writableLocations"][0].value("databaseAccountEndpoint", "");
  if (region_url.empty()) {
    std::cerr << "georoute_emulator_bench: the account lists no write region\n";
    return 1;
  }

  if (!expect(call(client,
                   make("POST", region_url, "/dbs", R"({"id":"bench"})"), *key),
              {201, 409}, "create database"))
    return 1;
  if (!expect(call(client,
                   make("POST", region_url, "/dbs/bench/colls",
                        R"({"id":"c","partitionKey":{"paths":["/pk"],)"
                        R"("kind":"Hash","version":2}})"),
                   *key),
              {201, 409}, "create collection"))
    return 1;
  auto upsert = make("POST", region_url, "/dbs/bench/colls/c/docs",
                     R"({"id":"x","pk":"p","payload":"0123456789abcdef"})");
  upsert.headers.emplace_back("x-ms-documentdb-partitionkey", R"(["p"])");
  upsert.headers.emplace_back("x-ms-documentdb-is-upsert", "true");
  if (!expect(call(client, upsert, *key), {200, 201}, "upsert document"))
    return 1;

  auto read = make("GET", region_url, "/dbs/bench/colls/c/docs/x");
  read.headers.emplace_back("x-ms-documentdb-partitionkey", R"(["p"])");
  read.headers.emplace_back("accept", "application/json");
  transport::sign_request(read, *key, std::chrono::system_clock::now());
  if (!expect(call(client, read, *key), {200}, "read document")) return 1;

  tally l;
  l.latencies_us.reserve(1 << 20);
  load chains{client, read, l};
  net::io_context raw_ioc{static_cast<int>(o.client_io_threads)};
  std::vector<std::thread> raw_threads;
  http::request<http::empty_body> raw_req{http::verb::get, read.target, 11};
  if (o.raw) {
    auto u = transport::parse_url(region_url);
    auto* parsed = std::get_if<transport::url>(&u);
    if (!parsed) {
      std::cerr << "georoute_emulator_bench: bad region URL " << region_url
                << "\n";
      return 1;
    }
    raw_req.set(http::field::host, parsed->host_header());
    for (const auto& [name, value] : read.headers)
      raw_req.set(name, value);
    raw_req.keep_alive(true);
    net::ip::tcp::endpoint ep{net::ip::make_address(parsed->host),
                              parsed->port};
    o.in_flight = o.connections;
    l.active = o.in_flight;
    for (size_t i = 0; i < o.connections; ++i)
      std::make_shared<raw_conn>(raw_ioc, raw_req, l)->start(ep);
    for (size_t i = 0; i < o.client_io_threads; ++i)
      raw_threads.emplace_back([&raw_ioc] { raw_ioc.run(); });
  } else {
    l.active = o.in_flight;
    for (size_t i = 0; i < o.in_flight; ++i)
      chains.issue();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds{o.warmup_ms});
  auto opened_before = client.stats().connections_opened;
  auto server_cpu0 = thread_cpu_seconds("emulator-io");
  l.measuring = true;
  auto t0 = steady::now();
  std::this_thread::sleep_for(std::chrono::milliseconds{o.duration_ms});
  l.measuring = false;
  auto t1 = steady::now();
  auto server_cpu = thread_cpu_seconds("emulator-io") - server_cpu0;
  l.stopping = true;
  {
    std::unique_lock<std::mutex> guard{l.mtx};
    l.cv.wait_for(guard, std::chrono::seconds{30},
                  [&] { return l.active == 0; });
  }
  raw_ioc.stop();
  for (auto& th : raw_threads)
    th.join();
  double secs = std::chrono::duration<double>(t1 - t0).count();
  std::vector<uint32_t> lat;
  {
    std::lock_guard<std::mutex> guard{l.mtx};
    lat.swap(l.latencies_us);
  }
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) -> double {
    if (lat.empty()) return 0;
    auto i = static_cast<size_t>(p * static_cast<double>(lat.size() - 1));
    return lat[i] / 1000.0;
  };
  auto stats = client.stats();
  std::printf("emulator point reads: %s, %s client, %zu connections, %zu in "
              "flight, server io threads %zu, client io threads %zu\n",
              emu ? "in-process emulator" : global.c_str(),
              o.raw ? "raw Beast" : "transport::http_client", o.connections,
              o.in_flight, o.server_io_threads, o.client_io_threads);
  std::printf("  window %.2f s: %llu ok, %llu failed -> %.0f req/s\n", secs,
              static_cast<unsigned long long>(l.completed.load()),
              static_cast<unsigned long long>(l.failed.load()),
              static_cast<double>(l.completed.load()) / secs);
  std::printf("  latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
              pct(0.50), pct(0.90), pct(0.99), pct(1.0));
  if (!o.raw)
    std::printf("  connections opened: %llu total, %llu during the window\n",
                static_cast<unsigned long long>(stats.connections_opened),
                static_cast<unsigned long long>(stats.connections_opened -
                                                opened_before));
  if (emu) {
    std::printf(
        "  server accepted connections: %llu\n",
        static_cast<unsigned long long>(emu->accepted_connections("West US")));
    // What the emulator's io thread(s) spent per read, whatever else ran on
    // the machine: the capacity of the server side on free cores.
    auto done = static_cast<double>(l.completed.load() + l.failed.load());
    if (done > 0 && server_cpu > 0)
      std::printf("  server io threads: %.2f CPU s in the window, %.1f us "
                  "per read -> ~%.0f reads/s per fully used core\n",
                  server_cpu, server_cpu * 1e6 / done, done / server_cpu);
  }
  return l.failed.load() == 0 ? 0 : 1;
}

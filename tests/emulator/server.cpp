// The emulator's Beast HTTP/1.1 servers: every Beast line of the emulator.
//
// Shape: one `listener` per region plus one for the global endpoint, all on
// one io_context run by `io_threads` threads. A `session` per accepted socket
// runs on its own strand: read (request_parser, body and header limits) ->
// [latency timer] -> socket fault or engine/admin -> write -> read again.
//
// Socket faults. `offline_refuse` swaps the listening socket for one that is
// bound to the same port but not listening: connects are refused, the port
// stays ours, and going online is just `listen()` again. Sessions are closed.
// `offline_reset` and `hang` are decided per request, after the read.
//
// Threads. A listener's acceptor, state changes and session registry are
// under its mutex; a session's socket is touched only on its strand (closes
// from other threads are posted). No exception leaves a handler: the engine
// and admin calls are wrapped, and every error_code overload is used.
//
// One file past the usual size on purpose: a Beast translation unit costs
// about 45 s and 1 GB to compile (CAF/Beast notes §0), so the sessions, the
// listeners and the `emulator` class that owns them stay in one.

#include "tests/emulator/server.hpp"

#include "tests/emulator/emulator.hpp"
#include "transport/auth.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

namespace georoute::emulator {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

// Concrete executor types: no type-erased any_io_executor on the hot path.
using strand_type = net::strand<net::io_context::executor_type>;
using socket_type = tcp::socket::rebind_executor<strand_type>::other;
using timer_type =
    net::basic_waitable_timer<std::chrono::steady_clock,
                              net::wait_traits<std::chrono::steady_clock>,
                              strand_type>;

constexpr uint64_t max_body_bytes = uint64_t{16} * 1024 * 1024;
constexpr uint32_t max_header_bytes = 64 * 1024;

const boost::system::error_category& http_category() {
  static const auto& cat =
      make_error_code(http::error::end_of_stream).category();
  return cat;
}

/// True on the emulator's io threads: state changes made from there (the
/// admin API) must not wait for work that needs those threads.
thread_local bool on_io_thread = false;

/// The `Date` header, formatted once per second per thread.
const std::string& http_date() {
  thread_local std::time_t cached = 0;
  thread_local std::string text;
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  if (t != cached || text.empty()) {
    cached = t;
    text = transport::rfc1123_date(now);
  }
  return text;
}

/// Counts down posted work; `wait_for` blocks a non-io thread until done.
class latch {
public:
  explicit latch(size_t n) : n_(n) {}
  void count_down() {
    std::lock_guard<std::mutex> guard{mtx_};
    if (n_ > 0 && --n_ == 0) cv_.notify_all();
  }
  void wait_for(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> guard{mtx_};
    cv_.wait_for(guard, limit, [this] { return n_ == 0; });
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  size_t n_;
};

/// What every session needs besides its listener.
struct server_context {
  engine* eng = nullptr;
  emulator* owner = nullptr;
};

class session;
using session_ptr = std::shared_ptr<session>;

class listener : public std::enable_shared_from_this<listener> {
public:
  listener(net::io_context& ioc, std::string region, bool global,
           server_context ctx)
      : ioc_(ioc), acceptor_(ioc), retry_timer_(ioc),
        region_(std::move(region)), global_(global), ctx_(ctx) {}

  const std::string& region() const { return region_; }
  bool global() const { return global_; }
  const server_context& context() const { return ctx_; }
  uint16_t port() const { return port_; }
  region_state state() const { return state_.load(); }
  std::chrono::milliseconds latency() const {
    return std::chrono::milliseconds{latency_ms_.load()};
  }
  void set_latency(std::chrono::milliseconds x) { latency_ms_ = x.count(); }
  uint64_t accepted() const { return accepted_.load(); }
  /// Sessions alive now (open connections).
  size_t open_sessions() {
    std::lock_guard<std::mutex> guard{mtx_};
    return sessions_.size();
  }

  /// Binds 127.0.0.1:`port` (0 = ephemeral) and listens.
  result<bool> open(uint16_t port);
  /// Starts the accept loop.
  void start();
  /// Closes the acceptor and every session; no waiting.
  void stop();
  result<bool> set_state(region_state s);
  /// Called by a session's destructor.
  void forget(const session* s);

private:
  void accept_locked();
  void on_accept(uint64_t gen, error_code ec, socket_type sock);
  result<bool> bind_locked(bool and_listen);
  std::vector<session_ptr> snapshot();
  void close_sessions(bool only_hung, bool wait);
  std::string where() const {
    return (global_ ? std::string{"global endpoint"}
                    : "region '" + region_ + "'") +
           " (127.0.0.1:" + std::to_string(port_) + ")";
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_; ///< re-arms accept after an error (EMFILE)
  const std::string region_;
  const bool global_;
  const server_context ctx_;
  std::atomic<region_state> state_{region_state::online};
  std::atomic<int64_t> latency_ms_{0};
  std::atomic<uint64_t> accepted_{0};

  std::mutex mtx_; // guards everything below and acceptor_
  uint16_t port_ = 0;
  uint64_t gen_ = 0; ///< bumped whenever pending accepts become stale
  bool stopped_ = false;
  std::unordered_map<const session*, std::weak_ptr<session>> sessions_;
};

using listener_ptr = std::shared_ptr<listener>;

class session : public std::enable_shared_from_this<session> {
public:
  session(socket_type sock, listener_ptr owner)
      : sock_(std::move(sock)), timer_(sock_.get_executor()),
        owner_(std::move(owner)) {}

  ~session() { owner_->forget(this); }

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  strand_type executor() { return sock_.get_executor(); }

  void start() { read(); }

  /// On the strand: closes the connection (all sessions, or hung ones).
  void close_if(bool only_hung) {
    if (!only_hung || hung_) close();
  }

private:
  void read() {
    parser_.emplace();
    parser_->body_limit(max_body_bytes);
    parser_->header_limit(max_header_bytes);
    http::async_read(sock_, buf_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(error_code ec) {
    if (closed_) return;
    if (ec == http::error::body_limit)
      return answer_malformed(413, "request body over 16 MiB");
    if (ec == http::error::header_limit)
      return answer_malformed(431, "request header block over 64 KiB");
    if (ec == http::error::end_of_stream ||
        ec == http::error::partial_message ||
        (ec && ec.category() != http_category()))
      return close(); // the peer left, or close() aborted the read
    if (ec)
      return answer_malformed(400, "malformed HTTP request: " + ec.message());
    to_plain_request();
    auto delay = owner_->global() ? 0ms : owner_->latency();
    if (delay.count() <= 0) return dispatch();
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (self->closed_) return;
      if (ec) return self->close();
      self->dispatch();
    });
  }

  void to_plain_request() {
    auto& msg = parser_->get();
    req_.method.assign(msg.method_string().data(), msg.method_string().size());
    req_.target.assign(msg.target().data(), msg.target().size());
    req_.headers.clear();
    for (const auto& field : msg) {
      std::string name{field.name_string()};
      for (auto& c : name)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      auto value = field.value();
      auto [pos, added] = req_.headers.try_emplace(std::move(name), value);
      if (!added) // a repeated header: the HTTP list form
        pos->second.append(", ").append(value.data(), value.size());
    }
    req_.body = std::move(msg.body());
    keep_alive_ = msg.keep_alive();
  }

  void dispatch() {
    if (!owner_->global()) {
      switch (owner_->state()) {
      case region_state::online:
        break;
      case region_state::offline_refuse:
        return close();
      case region_state::offline_reset:
        return reset();
      case region_state::hang:
        return hang();
      }
    }
    respond(serve());
  }

  http_response serve() {
    const auto& ctx = owner_->context();
    try {
      if (owner_->global() &&
          req_.target.compare(0, admin_prefix.size(), admin_prefix) == 0)
        return handle_admin(*ctx.owner, req_);
      return ctx.eng->handle(
          owner_->global() ? std::string{} : owner_->region(), req_);
    } catch (const std::exception& e) {
      return error_response(500, "InternalServerError",
                            std::string{"emulator failure: "} + e.what());
    } catch (...) {
      return error_response(500, "InternalServerError", "emulator failure");
    }
  }

  /// A gateway-style error body; `message` must not need JSON escapes
  /// beyond quotes and backslashes, which are dropped.
  static http_response error_response(int status, const char* code,
                                      const std::string& message) {
    http_response r;
    r.status = status;
    r.set("content-type", "application/json");
    std::string body = std::string{R"({"code":")"} + code + R"(","message":")";
    for (char c : message)
      if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20)
        body += c;
    r.body = body + "\"}";
    return r;
  }

  void answer_malformed(int status, const std::string& message) {
    keep_alive_ = false;
    respond(error_response(
        status, status == 400 ? "BadRequest" : "RequestTooLarge", message));
  }

  void respond(http_response r) {
    res_ = {};
    res_.version(11);
    if (r.status < 100 || r.status > 999)
      r = error_response(500, "InternalServerError",
                         "engine answered status " + std::to_string(r.status));
    res_.result(static_cast<unsigned>(r.status));
    if (http::obsolete_reason(res_.result()) == "<unknown-status>")
      res_.reason(r.status == 449 ? "Retry With" : "Unknown");
    bool cut = false;
    for (auto& [name, value] : r.headers) {
      if (name == truncate_marker) {
        cut = true;
        continue;
      }
      res_.set(name, value);
    }
    res_.set(http::field::date, http_date());
    res_.keep_alive(keep_alive_);
    auto cls = http::to_status_class(res_.result());
    if (cls == http::status_class::informational || r.status == 204 ||
        r.status == 304)
      r.body.clear();
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    if (cut) return write_cut();
    http::async_write(sock_, res_,
                      [self = shared_from_this()](error_code ec, size_t) {
                        self->on_write(ec);
                      });
  }

  void on_write(error_code ec) {
    if (closed_) return;
    if (ec) return close();
    if (!keep_alive_) {
      error_code ignored;
      sock_.shutdown(socket_type::shutdown_send, ignored);
      return close();
    }
    read();
  }

  /// A `fault_rule::truncate` response: the header block announces the
  /// whole body, half of it goes out (half of the header block when there
  /// is no body), then the connection closes.
  void write_cut() {
    std::ostringstream head;
    head << res_.base();
    const auto& body = res_.body();
    raw_ = head.str();
    if (body.empty())
      raw_.resize(raw_.size() / 2);
    else
      raw_.append(body, 0, body.size() / 2);
    net::async_write(sock_, net::buffer(raw_),
                     [self = shared_from_this()](error_code, size_t) {
                       if (self->closed_) return;
                       error_code ignored;
                       self->sock_.shutdown(socket_type::shutdown_send,
                                            ignored);
                       self->close();
                     });
  }

  /// Accepted and read; never answered. Reads on to notice the peer leaving.
  void hang() {
    hung_ = true;
    sock_.async_read_some(net::buffer(drain_),
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->close();
                            self->hang();
                          });
  }

  /// RST instead of FIN: SO_LINGER with a zero timeout, then close.
  void reset() {
    error_code ignored;
    sock_.set_option(net::socket_base::linger(true, 0), ignored);
    closed_ = true;
    timer_.cancel();
    sock_.close(ignored);
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    timer_.cancel();
    sock_.shutdown(socket_type::shutdown_both, ignored);
    sock_.close(ignored);
  }

  socket_type sock_;
  timer_type timer_;
  listener_ptr owner_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  http_request req_;
  std::string raw_; ///< a cut response (write_cut)
  bool keep_alive_ = true;
  bool closed_ = false;
  bool hung_ = false;
  char drain_[512];
};

// -- listener ---------------------------------------------------------------

result<bool> listener::bind_locked(bool and_listen) {
  error_code ec;
  tcp::endpoint ep{net::ip::address_v4::loopback(), port_};
  const char* step = "open";
  acceptor_.open(ep.protocol(), ec);
  if (!ec) {
    step = "set SO_REUSEADDR on";
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    step = "bind";
    acceptor_.bind(ep, ec);
  }
  if (!ec && and_listen) {
    step = "listen on";
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
  }
  if (!ec && port_ == 0) port_ = acceptor_.local_endpoint(ec).port();
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    return problem{"cannot " + std::string{step} + " " + where() + ": " +
                   ec.message()};
  }
  return true;
}

result<bool> listener::open(uint16_t port) {
  std::lock_guard<std::mutex> guard{mtx_};
  port_ = port;
  return bind_locked(true);
}

void listener::start() {
  std::lock_guard<std::mutex> guard{mtx_};
  accept_locked();
}

void listener::accept_locked() {
  if (stopped_ || !acceptor_.is_open()) return;
  acceptor_.async_accept(
      net::make_strand(ioc_.get_executor()),
      [self = shared_from_this(), gen = gen_](error_code ec, socket_type sock) {
        self->on_accept(gen, ec, std::move(sock));
      });
}

void listener::on_accept(uint64_t gen, error_code ec, socket_type sock) {
  session_ptr s;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (gen != gen_ || stopped_ || ec == net::error::operation_aborted)
      return; // a stale accept: the socket (if any) closes with `sock`
    if (!ec) {
      ++accepted_;
      error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      s = std::make_shared<session>(std::move(sock), shared_from_this());
      sessions_.emplace(s.get(), s); // under the lock: stop() sees it
      accept_locked();
    } else {
      // Out of descriptors or similar: try again soon instead of spinning.
      retry_timer_.expires_after(50ms);
      retry_timer_.async_wait([self = shared_from_this(), gen](error_code ec) {
        if (ec) return;
        std::lock_guard<std::mutex> guard{self->mtx_};
        if (gen == self->gen_ && !self->stopped_) self->accept_locked();
      });
    }
  }
  if (s) net::dispatch(s->executor(), [s] { s->start(); });
}

void listener::forget(const session* s) {
  std::lock_guard<std::mutex> guard{mtx_};
  sessions_.erase(s);
}

std::vector<session_ptr> listener::snapshot() {
  std::vector<session_ptr> out;
  std::lock_guard<std::mutex> guard{mtx_};
  out.reserve(sessions_.size());
  for (auto& [ptr, weak] : sessions_)
    if (auto s = weak.lock()) out.push_back(std::move(s));
  return out;
}

void listener::close_sessions(bool only_hung, bool wait) {
  auto list = snapshot();
  if (list.empty()) return;
  auto done = std::make_shared<latch>(list.size());
  for (auto& s : list)
    net::post(s->executor(), [s, only_hung, done] {
      s->close_if(only_hung);
      done->count_down();
    });
  if (wait && !on_io_thread) done->wait_for(2s);
}

void listener::stop() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopped_ = true;
    ++gen_;
    error_code ignored;
    acceptor_.close(ignored);
    retry_timer_.cancel();
  }
  close_sessions(false, false);
}

result<bool> listener::set_state(region_state s) {
  region_state old;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopped_) return problem{where() + " is stopped"};
    old = state_.load();
    if (old == s) return true;
    if (s == region_state::offline_refuse) {
      // Keep the port bound (so nothing else takes it) but not listening.
      // If the re-bind fails, connects are refused all the same, and going
      // online binds afresh.
      ++gen_;
      error_code ignored;
      acceptor_.close(ignored);
      (void)bind_locked(false);
    } else if (old == region_state::offline_refuse) {
      error_code ec;
      if (!acceptor_.is_open()) {
        if (auto bound = bind_locked(true); !bound) return bound.error();
      } else {
        acceptor_.listen(net::socket_base::max_listen_connections, ec);
        if (ec)
          return problem{"cannot listen on " + where() + ": " + ec.message()};
      }
      ++gen_;
      accept_locked();
    }
    state_ = s;
  }
  if (s == region_state::offline_refuse)
    close_sessions(false, true);
  else if (old == region_state::hang)
    close_sessions(true, true);
  return true;
}

std::string base_url(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port) + "/";
}

} // namespace

// -- region_state -------------------------------------------------------------

const char* to_string(region_state x) {
  switch (x) {
  case region_state::online:
    return "online";
  case region_state::offline_refuse:
    return "offline_refuse";
  case region_state::offline_reset:
    return "offline_reset";
  case region_state::hang:
    return "hang";
  }
  return "online";
}

result<region_state> parse_region_state(const std::string& text) {
  for (auto x : {region_state::online, region_state::offline_refuse,
                 region_state::offline_reset, region_state::hang})
    if (text == to_string(x)) return x;
  return problem{"state: '" + text +
                 "' is not one of online, offline_refuse, offline_reset, "
                 "hang"};
}

// -- emulator -----------------------------------------------------------------

struct emulator::impl {
  // Declaration order is destruction order reversed: the engine outlives the
  // io_context, whose destruction may still destroy session handlers.
  emulator_options opts;
  std::unique_ptr<engine> eng;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  std::vector<listener_ptr> regions; ///< account order
  std::map<std::string, listener_ptr> by_name;
  listener_ptr global;
  std::vector<std::thread> threads;
  std::mutex run_mtx;
  std::condition_variable run_cv;
  size_t running = 0;

  explicit impl(emulator_options o)
      : opts(std::move(o)), ioc(static_cast<int>(opts.io_threads)) {}

  listener* find(const std::string& region) const {
    auto i = by_name.find(region);
    return i == by_name.end() ? nullptr : i->second.get();
  }

  problem unknown(const std::string& region) const {
    std::string known;
    for (const auto& l : regions)
      known += (known.empty() ? "'" : ", '") + l->region() + "'";
    return problem{"region: unknown region '" + region + "' (known: " + known +
                   ")"};
  }

  void stop() {
    for (auto& l : regions)
      l->stop();
    if (global) global->stop();
    guard.reset();
    {
      // Everything is closed, so run() returns once the closes are through;
      // a stuck handler must not hang the destructor.
      std::unique_lock<std::mutex> lk{run_mtx};
      if (!run_cv.wait_for(lk, 5s, [this] { return running == 0; })) ioc.stop();
    }
    for (auto& t : threads)
      if (t.joinable()) t.join();
    threads.clear();
  }
};

emulator::emulator() = default;

emulator::~emulator() {
  if (impl_) impl_->stop();
}

result<std::unique_ptr<emulator>> emulator::start(emulator_options opts) {
  const auto& names = opts.engine.regions;
  if (names.empty()) return problem{"regions: at least one region is required"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty())
      return problem{"regions: region " + std::to_string(i + 1) +
                     " has an empty name"};
    if (std::find(names.begin(), names.begin() + static_cast<ptrdiff_t>(i),
                  names[i]) != names.begin() + static_cast<ptrdiff_t>(i))
      return problem{"regions: '" + names[i] + "' is listed twice"};
  }
  if (!opts.region_ports.empty() && opts.region_ports.size() != names.size())
    return problem{"region_ports: " + std::to_string(opts.region_ports.size()) +
                   " ports for " + std::to_string(names.size()) +
                   " regions (give one per region, or none)"};
  if (opts.io_threads == 0 || opts.io_threads > 64)
    return problem{"io_threads: " + std::to_string(opts.io_threads) +
                   " is outside [1, 64]"};

  std::unique_ptr<emulator> self{new emulator};
  self->impl_ = std::make_unique<impl>(std::move(opts));
  auto& d = *self->impl_;
  d.eng = std::make_unique<engine>(d.opts.engine);
  server_context ctx{d.eng.get(), self.get()};
  std::map<std::string, std::string> urls;
  for (size_t i = 0; i < d.opts.engine.regions.size(); ++i) {
    const auto& name = d.opts.engine.regions[i];
    auto l = std::make_shared<listener>(d.ioc, name, false, ctx);
    uint16_t port = d.opts.region_ports.empty() ? 0 : d.opts.region_ports[i];
    if (auto ok = l->open(port); !ok) return ok.error();
    urls.emplace(name, base_url(l->port()));
    d.regions.push_back(l);
    d.by_name.emplace(name, std::move(l));
  }
  d.global = std::make_shared<listener>(d.ioc, std::string{}, true, ctx);
  if (auto ok = d.global->open(d.opts.global_port); !ok) return ok.error();
  d.eng->set_endpoints(std::move(urls));

  d.guard.emplace(d.ioc.get_executor());
  for (auto& l : d.regions)
    l->start();
  d.global->start();
  d.running = d.opts.io_threads;
  for (size_t i = 0; i < d.opts.io_threads; ++i)
    d.threads.emplace_back([&d] {
      on_io_thread = true;
      pthread_setname_np(pthread_self(), "emulator-io"); // for top and perf
      for (;;) {
        try {
          d.ioc.run();
          break;
        } catch (...) {
          // Handlers catch their own errors; a stray one must not end the
          // thread while sessions still need it.
        }
      }
      std::lock_guard<std::mutex> lk{d.run_mtx};
      if (--d.running == 0) d.run_cv.notify_all();
    });
  return self;
}

std::string emulator::global_endpoint() const {
  return base_url(impl_->global->port());
}

std::string emulator::endpoint(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? base_url(l->port()) : std::string{};
}

std::map<std::string, std::string> emulator::endpoints() const {
  std::map<std::string, std::string> out;
  for (const auto& l : impl_->regions)
    out.emplace(l->region(), base_url(l->port()));
  return out;
}

const std::string& emulator::key() const {
  return impl_->opts.engine.master_key;
}

engine& emulator::control() {
  return *impl_->eng;
}

result<bool> emulator::set_region_state(const std::string& region,
                                        region_state s) {
  auto* l = impl_->find(region);
  if (!l) return impl_->unknown(region);
  return l->set_state(s);
}

region_state emulator::get_region_state(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? l->state() : region_state::online;
}

result<bool> emulator::set_latency(const std::string& region,
                                   std::chrono::milliseconds latency) {
  auto* l = impl_->find(region);
  if (!l) return impl_->unknown(region);
  if (latency.count() < 0)
    return problem{"latency: " + std::to_string(latency.count()) +
                   " ms is negative"};
  l->set_latency(latency);
  return true;
}

std::chrono::milliseconds
emulator::get_latency(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? l->latency() : 0ms;
}

uint64_t emulator::accepted_connections(const std::string& region) const {
  if (region.empty()) return impl_->global->accepted();
  auto* l = impl_->find(region);
  return l ? l->accepted() : 0;
}

uint64_t emulator::open_connections() const {
  uint64_t n = impl_->global->open_sessions();
  for (const auto& l : impl_->regions)
    n += l->open_sessions();
  return n;
}

} // namespace georoute::emulator

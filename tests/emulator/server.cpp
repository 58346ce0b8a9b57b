// The emulator's Beast HTTP/1.1 servers: every Beast line of the emulator.
//
// Shape: one `listener` per region plus one for the global endpoint, all on
// one io_context run by `io_threads` threads. A `session` per accepted socket
// runs on its own strand: read (request_parser, body and header limits) ->
// [latency timer] -> socket fault or engine/admin -> write -> read again.
// When an accept completes, the listener takes every connection the kernel
// queued meanwhile (a busy io thread must not admit one a turn).
//
// Socket faults. `offline_refuse` swaps the listening socket for one that is
// bound to the same port but not listening: connects are refused, the port
// stays ours, and going online is just `listen()` again. Sessions are closed.
// `offline_reset` and `hang` are decided per request, after the read.
//
// Grey failures. A region's latency (± jitter) is a timer before dispatch; a
// rule's delay (the engine's delay marker) a timer after it; a hang rule's
// marker makes the session hold the request like the region's hang state,
// remembering the rule so that lifting it (the engine's lift listener)
// closes exactly its connections. A flap is one timer per listener that
// switches the state at each phase end, under the listener's mutex.
//
// Threads. A listener's acceptor, state changes and session registry are
// under its mutex; a session's socket is touched only on its strand (closes
// from other threads are posted). No exception leaves a handler: the engine
// and admin calls are wrapped, and every error_code overload is used.
//
// One file past the usual size on purpose: a Beast translation unit is slow
// and memory-hungry to compile, so the sessions, the listeners and the
// `emulator` class that owns them stay in one.

#include "tests/emulator/server.hpp"

#include "georoute/transport/auth.hpp"
#include "tests/emulator/emulator.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <pthread.h>
#include <sstream>
#include <sys/socket.h>
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
/// Connections a listener accepts at once when its accept completes.
constexpr size_t max_accepts_per_turn = 256;

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

/// Which sessions a close applies to.
struct close_filter {
  enum kind_type {
    every,       ///< all of them
    region_hang, ///< those held by the region's hang state
    rule_hang,   ///< those held by a hang rule
  } kind = every;
  std::optional<uint64_t> rule; ///< rule_hang: this one; nullopt = any
};

/// What a listener must close after a state change, outside its lock.
using closing = std::optional<close_filter>;

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
  std::chrono::milliseconds jitter() const {
    return std::chrono::milliseconds{jitter_ms_.load()};
  }
  void set_latency(std::chrono::milliseconds x, std::chrono::milliseconds j) {
    jitter_ms_ = 0; // never more jitter than latency, even in between
    latency_ms_ = x.count();
    jitter_ms_ = j.count();
  }
  void seed(uint64_t x) {
    std::lock_guard<std::mutex> guard{rng_mtx_};
    rng_.seed(x);
  }
  /// The wait before one request is served: latency ± jitter, plus the
  /// flap's latency while it is down.
  std::chrono::milliseconds draw_delay() {
    std::chrono::milliseconds d{latency_ms_.load()};
    if (auto j = jitter_ms_.load(); j > 0) {
      std::lock_guard<std::mutex> guard{rng_mtx_};
      d = jittered(d, std::chrono::milliseconds{j}, rng_);
    }
    return d + std::chrono::milliseconds{flap_latency_ms_.load()};
  }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t accept_turns() const { return accept_turns_.load(); }
  /// Requests held now by a hang (the state or a rule).
  uint64_t held() const { return held_.load(); }
  void add_held(int64_t delta) { held_ += static_cast<uint64_t>(delta); }
  /// Connections the kernel completed that the listener has not accepted
  /// yet (its accept queue); 0 while it refuses or cannot be read.
  uint64_t accept_queue() const;
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
  /// An explicit state; ends a flap.
  result<bool> set_state(region_state s);
  result<bool> start_flap(const flap_schedule& f);
  result<bool> stop_flap();
  flap_status flap() const;
  /// Closes the connections held by hang rule `rule` (nullopt = any rule).
  void release_held(std::optional<uint64_t> rule) {
    close_sessions({close_filter::rule_hang, rule}, true);
  }
  /// Called by a session's destructor.
  void forget(const session* s);

private:
  void accept_locked();
  void on_accept(uint64_t gen, error_code ec, socket_type sock);
  result<bool> bind_locked(bool and_listen);
  std::vector<session_ptr> snapshot();
  void close_sessions(close_filter which, bool wait);
  /// Moves to `s`; says which sessions to close once the lock is released.
  result<closing> apply_state_locked(region_state s);
  void end_flap_locked();
  /// Enters the flap's next phase and arms the timer for its end.
  result<closing> enter_phase_locked(bool down);
  void on_flap(uint64_t gen);
  void finish(const closing& c) {
    if (c) close_sessions(*c, true);
  }
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
  std::atomic<int64_t> jitter_ms_{0};
  std::atomic<int64_t> flap_latency_ms_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> accept_turns_{0};
  std::atomic<uint64_t> held_{0};
  std::mutex rng_mtx_;
  std::mt19937_64 rng_; ///< the jitter's, under rng_mtx_

  mutable std::mutex mtx_; // guards everything below and acceptor_
  uint16_t port_ = 0;
  uint64_t gen_ = 0; ///< bumped whenever pending accepts become stale
  bool stopped_ = false;
  std::unordered_map<const session*, std::weak_ptr<session>> sessions_;
  std::optional<flap_schedule> flap_; ///< set while flapping
  net::steady_timer flap_timer_{ioc_};
  uint64_t flap_gen_ = 0; ///< bumped whenever a pending phase end is stale
  bool flap_down_ = false;
  uint64_t flap_transitions_ = 0;
  std::chrono::steady_clock::time_point flap_next_; ///< end of this phase
};

using listener_ptr = std::shared_ptr<listener>;

class session : public std::enable_shared_from_this<session> {
public:
  session(socket_type sock, listener_ptr owner)
      : sock_(std::move(sock)), timer_(sock_.get_executor()),
        owner_(std::move(owner)) {}

  ~session() {
    release_hold();
    owner_->forget(this);
  }

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  strand_type executor() { return sock_.get_executor(); }

  void start() { read(); }

  /// On the strand: closes the connection if `which` applies to it.
  void close_if(const close_filter& which) {
    switch (which.kind) {
    case close_filter::every:
      return close();
    case close_filter::region_hang:
      if (held_ && hold_rule_ == 0) close();
      return;
    case close_filter::rule_hang:
      if (held_ && hold_rule_ != 0 &&
          (!which.rule || *which.rule == hold_rule_))
        close();
      return;
    }
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
    auto delay = owner_->global() ? 0ms : owner_->draw_delay();
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
        return hold(0);
      }
    }
    auto r = serve();
    // The engine's grey-failure markers: hold the request, or answer late.
    std::optional<uint64_t> hold_rule;
    int64_t delay_ms = 0;
    for (auto it = r.headers.begin(); it != r.headers.end();) {
      bool hang = it->first == hang_marker;
      if (!hang && it->first != delay_marker) {
        ++it;
        continue;
      }
      uint64_t v = 0;
      const auto& text = it->second;
      std::from_chars(text.data(), text.data() + text.size(), v);
      if (hang)
        hold_rule = v;
      else
        delay_ms = static_cast<int64_t>(v);
      it = r.headers.erase(it);
    }
    if (hold_rule) return hold(*hold_rule);
    if (delay_ms <= 0) return respond(std::move(r));
    late_ = std::move(r);
    timer_.expires_after(std::chrono::milliseconds{delay_ms});
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (self->closed_) return;
      if (ec) return self->close();
      self->respond(std::move(self->late_));
    });
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

  /// Accepted and read; never answered, until the hang is lifted (then the
  /// connection closes). `rule` is the hang rule's id, 0 for the region's
  /// hang state.
  void hold(uint64_t rule) {
    if (!held_) owner_->add_held(1);
    held_ = true;
    hold_rule_ = rule;
    drain();
  }

  void release_hold() {
    if (held_) owner_->add_held(-1);
    held_ = false;
  }

  /// Reads on to notice the peer leaving.
  void drain() {
    sock_.async_read_some(net::buffer(drain_),
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->close();
                            self->drain();
                          });
  }

  /// RST instead of FIN: SO_LINGER with a zero timeout, then close.
  void reset() {
    error_code ignored;
    sock_.set_option(net::socket_base::linger(true, 0), ignored);
    closed_ = true;
    release_hold();
    timer_.cancel();
    sock_.close(ignored);
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    release_hold();
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
  http_response late_; ///< an answer waiting for its delay
  std::string raw_;    ///< a cut response (write_cut)
  bool keep_alive_ = true;
  bool closed_ = false;
  bool held_ = false;      ///< held by a hang (counted in the listener)
  uint64_t hold_rule_ = 0; ///< the hang rule holding it; 0 = the region's
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
  if (!ec) {
    step = "make non-blocking";
    acceptor_.non_blocking(true, ec); // on_accept's synchronous accepts
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
  std::vector<session_ptr> accepted;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (gen != gen_ || stopped_ || ec == net::error::operation_aborted)
      return; // a stale accept: the socket (if any) closes with `sock`
    if (!ec) {
      auto take = [&](socket_type&& one) {
        ++accepted_;
        error_code ignored;
        one.set_option(tcp::no_delay(true), ignored);
        auto s = std::make_shared<session>(std::move(one), shared_from_this());
        sessions_.emplace(s.get(), s); // under the lock: stop() sees it
        accepted.push_back(std::move(s));
      };
      ++accept_turns_;
      take(std::move(sock));
      // Everything else the kernel queued, now: one accept per turn of a
      // busy io thread is a few dozen a second, and a burst of new
      // connections (a client whose requests moved to this region) would
      // wait seconds in the queue, as no real gateway makes them wait.
      for (size_t i = 0; i < max_accepts_per_turn; ++i) {
        error_code more;
        auto next =
            acceptor_.accept(net::make_strand(ioc_.get_executor()), more);
        if (more) break; // would_block: the queue is empty
        take(std::move(next));
      }
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
  for (auto& s : accepted)
    net::dispatch(s->executor(), [s] { s->start(); });
}

uint64_t listener::accept_queue() const {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!acceptor_.is_open() || state_ == region_state::offline_refuse) return 0;
  // On a listening socket, Linux reports the accept queue's length as
  // tcpi_unacked.
  tcp_info info{};
  socklen_t len = sizeof(info);
  auto fd = const_cast<tcp::acceptor&>(acceptor_).native_handle();
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return 0;
  return info.tcpi_unacked;
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

void listener::close_sessions(close_filter which, bool wait) {
  auto list = snapshot();
  if (list.empty()) return;
  auto done = std::make_shared<latch>(list.size());
  for (auto& s : list)
    net::post(s->executor(), [s, which, done] {
      s->close_if(which);
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
    end_flap_locked();
  }
  close_sessions({}, false);
}

result<closing> listener::apply_state_locked(region_state s) {
  region_state old = state_.load();
  if (old == s) return closing{};
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
  if (s == region_state::offline_refuse) return closing{close_filter{}};
  if (old == region_state::hang)
    return closing{close_filter{close_filter::region_hang, {}}};
  return closing{};
}

result<bool> listener::set_state(region_state s) {
  closing c;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopped_) return problem{where() + " is stopped"};
    end_flap_locked();
    auto applied = apply_state_locked(s);
    if (!applied) return applied.error();
    c = *applied;
  }
  finish(c);
  return true;
}

void listener::end_flap_locked() {
  if (!flap_) return;
  flap_.reset();
  ++flap_gen_;
  flap_down_ = false;
  flap_latency_ms_ = 0;
  flap_timer_.cancel();
}

result<closing> listener::enter_phase_locked(bool down) {
  const auto& f = *flap_;
  flap_down_ = down;
  ++flap_transitions_;
  flap_latency_ms_ = down ? f.down_latency.count() : 0;
  auto applied = apply_state_locked(down ? f.down_state : region_state::online);
  // The next phase end counts from this one's, so that late timers do not
  // stretch the period; a phase that is already over starts afresh.
  auto length = down ? f.down_for : f.up_for;
  auto now = std::chrono::steady_clock::now();
  flap_next_ += length;
  if (flap_next_ < now) flap_next_ = now + length;
  flap_timer_.expires_at(flap_next_);
  flap_timer_.async_wait(
      [self = shared_from_this(), gen = flap_gen_](error_code ec) {
        if (!ec) self->on_flap(gen);
      });
  return applied;
}

void listener::on_flap(uint64_t gen) {
  closing c;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopped_ || gen != flap_gen_ || !flap_) return;
    // A failed switch (the port cannot listen again) is retried at the
    // next phase end; the flap goes on.
    if (auto applied = enter_phase_locked(!flap_down_)) c = *applied;
  }
  finish(c);
}

result<bool> listener::start_flap(const flap_schedule& f) {
  closing c;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopped_) return problem{where() + " is stopped"};
    end_flap_locked();
    flap_ = f;
    flap_transitions_ = 0;
    flap_next_ = std::chrono::steady_clock::now();
    auto applied = enter_phase_locked(true);
    if (!applied) {
      end_flap_locked();
      return applied.error();
    }
    c = *applied;
  }
  finish(c);
  return true;
}

result<bool> listener::stop_flap() {
  closing c;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!flap_) return true;
    end_flap_locked();
    auto applied = apply_state_locked(region_state::online);
    if (!applied) return applied.error();
    c = *applied;
  }
  finish(c);
  return true;
}

flap_status listener::flap() const {
  std::lock_guard<std::mutex> guard{mtx_};
  flap_status out;
  if (!flap_) return out;
  out.active = true;
  out.down = flap_down_;
  out.transitions = flap_transitions_;
  out.schedule = *flap_;
  return out;
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
  for (size_t i = 0; i < d.regions.size(); ++i)
    d.regions[i]->seed(d.opts.seed + i);
  // A lifted hang rule releases the requests it holds, wherever they are.
  d.eng->on_hang_lifted([&d](std::optional<uint64_t> rule) {
    for (auto& l : d.regions)
      l->release_held(rule);
    d.global->release_held(rule);
  });

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
                                   std::chrono::milliseconds latency,
                                   std::chrono::milliseconds jitter) {
  auto* l = impl_->find(region);
  if (!l) return impl_->unknown(region);
  if (latency.count() < 0)
    return problem{"latency: " + std::to_string(latency.count()) +
                   " ms is negative"};
  if (jitter.count() < 0 || jitter > latency)
    return problem{"jitter: " + std::to_string(jitter.count()) +
                   " ms is outside [0, latency = " +
                   std::to_string(latency.count()) + " ms]"};
  l->set_latency(latency, jitter);
  return true;
}

std::chrono::milliseconds
emulator::get_latency(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? l->latency() : 0ms;
}

std::chrono::milliseconds
emulator::get_jitter(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? l->jitter() : 0ms;
}

result<bool> emulator::start_flap(const std::string& region, flap_schedule s) {
  auto* l = impl_->find(region);
  if (!l) return impl_->unknown(region);
  constexpr std::chrono::milliseconds shortest{10};
  constexpr std::chrono::milliseconds longest{std::chrono::hours{24}};
  for (auto [name, value] : {std::pair<const char*, std::chrono::milliseconds>{
                                 "down_for", s.down_for},
                             {"up_for", s.up_for}})
    if (value < shortest || value > longest)
      return problem{std::string{name} + ": " + std::to_string(value.count()) +
                     " ms is outside [10 ms, 24 h]"};
  if (s.down_latency.count() < 0 || s.down_latency > longest)
    return problem{"down_latency: " + std::to_string(s.down_latency.count()) +
                   " ms is outside [0, 24 h]"};
  if (s.down_state == region_state::online && s.down_latency.count() == 0)
    return problem{"down_latency: a flap whose down_state is online only "
                   "turns slow, so it needs down_latency > 0"};
  return l->start_flap(s);
}

result<bool> emulator::stop_flap(const std::string& region) {
  auto* l = impl_->find(region);
  if (!l) return impl_->unknown(region);
  return l->stop_flap();
}

flap_status emulator::get_flap(const std::string& region) const {
  auto* l = impl_->find(region);
  return l ? l->flap() : flap_status{};
}

uint64_t emulator::held_requests(const std::string& region) const {
  if (region.empty()) return impl_->global->held();
  auto* l = impl_->find(region);
  return l ? l->held() : 0;
}

result<bool> emulator::reset_faults() {
  std::optional<problem> first;
  for (auto& l : impl_->regions) {
    auto ok = l->set_state(region_state::online); // ends a flap too
    if (!ok && !first) first = ok.error();
    l->set_latency(0ms, 0ms);
  }
  impl_->eng->clear_faults();
  if (first) return *first;
  return true;
}

uint64_t emulator::accepted_connections(const std::string& region) const {
  if (region.empty()) return impl_->global->accepted();
  auto* l = impl_->find(region);
  return l ? l->accepted() : 0;
}

uint64_t emulator::accept_turns(const std::string& region) const {
  if (region.empty()) return impl_->global->accept_turns();
  auto* l = impl_->find(region);
  return l ? l->accept_turns() : 0;
}

void emulator::post_to_io(std::function<void()> f) {
  net::post(impl_->ioc, std::move(f));
}

uint64_t emulator::accept_queue(const std::string& region) const {
  if (region.empty()) return impl_->global->accept_queue();
  auto* l = impl_->find(region);
  return l ? l->accept_queue() : 0;
}

uint64_t emulator::open_connections(const std::string& region) const {
  if (region.empty()) return impl_->global->open_sessions();
  auto* l = impl_->find(region);
  return l ? l->open_sessions() : 0;
}

uint64_t emulator::open_connections() const {
  uint64_t n = impl_->global->open_sessions();
  for (const auto& l : impl_->regions)
    n += l->open_sessions();
  return n;
}

} // namespace georoute::emulator

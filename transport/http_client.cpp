// Boost.Beast HTTP/1.1 client behind http_client's pimpl. The only
// translation unit of the project proper that includes Beast, Asio or OpenSSL
// TLS headers.
//
// Shape: one `client_core` (io_context, io threads, TLS context, one pool per
// endpoint) and one `connection<Tls>` object per socket, in the style of the
// Beast async-ssl client example: one handler per async step, a strand per
// connection, `if (ec) return fail(ec)` first, a deadline before every step.
//
// Lifetimes. Every async handler holds a shared_ptr to its connection; the
// core outlives all of them because its destructor drains the io_context
// before any member goes away. A job (one request attempt) is owned by the
// pool queue or by exactly one connection at a time, and `complete()` is
// guarded by an atomic flag, so a callback runs at most once; shutdown
// completes whatever is left, so it runs at least once.
//
// Threads. Pool bookkeeping (idle lists, queues, slot counts) is under
// `mtx_`; socket state is touched only on the connection's strand.
// Callbacks never run with a lock held.

#include "transport/http_client.hpp"

#include "transport/io_loop_asio.hpp"
#include "transport/url.hpp"
#include "transport/version.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace georoute::transport {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;
using error_code = beast::error_code;

constexpr const char* shut_down_text = "client shut down";

/// One request attempt, from send() to its single completion.
struct job {
  request req;
  http_client::callback cb;
  steady::time_point deadline;
  std::atomic<bool> done{false};
  // Guarded by client_core::mtx_.
  bool queued = false;
  std::unique_ptr<net::steady_timer> queue_timer;
  // Touched only by the connection that currently owns the job.
  bool retried = false;
};

using job_ptr = std::shared_ptr<job>;

class connection_base;
using connection_ptr = std::shared_ptr<connection_base>;

/// The connections of one endpoint key (scheme, host, port). All mutable
/// fields are guarded by client_core::mtx_; `u` and `authority` never change.
struct endpoint_pool {
  url u;
  std::string authority;   ///< "host:port" for error texts
  std::string host_header; ///< the Host header's value
  size_t open = 0;         ///< connections alive or being established
  std::vector<connection_ptr> idle;
  std::deque<job_ptr> waiting;
};

using pool_ptr = std::shared_ptr<endpoint_pool>;

class client_core;

/// What the pool needs from a connection, whatever its stream type.
class connection_base : public std::enable_shared_from_this<connection_base> {
public:
  connection_base(std::shared_ptr<client_core> core, pool_ptr pool);
  virtual ~connection_base();

  connection_base(const connection_base&) = delete;
  connection_base& operator=(const connection_base&) = delete;

  /// Runs `j` on this connection: posted to its strand, or in loop mode
  /// run right here when called on the loop thread. Never under a lock.
  virtual void start(job_ptr j) = 0;

  /// Closes the socket so that a pending step fails with "client shut down".
  virtual void abort() = 0;

  /// The same, at once: loop mode, on the loop's driver thread only.
  virtual void abort_now() = 0;

  const pool_ptr& pool() const { return pool_; }

protected:
  // Shared: in loop mode the core outlives `http_client` until the last
  // aborted handler of its connections has run on the loop.
  std::shared_ptr<client_core> core_;
  pool_ptr pool_;
  /// Numbered from 1 per client, for diagnostics (`outcome::connection`).
  uint64_t id_;
};

bool is_ip_literal(const std::string& host) {
  error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

std::string authority_of(const url& u) {
  auto host =
      u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  return host + ":" + std::to_string(u.port);
}

template <class T>
T parse_number(std::string_view s, T fallback) {
  if (s.empty()) return fallback;
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return fallback;
  return value;
}

/// The peer closed the socket: the error a dead kept-alive socket produces.
bool is_peer_closed(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset ||
         ec == net::error::connection_aborted ||
         ec == net::error::broken_pipe || ec == net::error::not_connected ||
         ec == ssl::error::stream_truncated;
}

bool is_http_error(const error_code& ec) {
  return ec.category() ==
         make_error_code(http::error::end_of_stream).category();
}

bool is_tls_error(const error_code& ec) {
  return ec.category() == net::error::get_ssl_category() ||
         ec.category() == ssl::error::get_stream_category();
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<unsigned char>(a[i]);
    auto y = static_cast<unsigned char>(b[i]);
    if (x != y && std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

/// Headers the client writes itself; a caller's are left out.
bool client_owned(std::string_view name) {
  return iequals(name, "host") || iequals(name, "user-agent") ||
         iequals(name, "content-length") || iequals(name, "connection") ||
         iequals(name, "transfer-encoding");
}

/// RFC 9110 token characters (methods, header names).
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) continue;
    if (std::string_view{"!#$%&'*+-.^_`|~"}.find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

/// What in `r` cannot be written as one well-formed HTTP/1.1 request (a
/// CR or LF would split it and smuggle a header or a second request), or
/// "" when it can. Checked before anything is sent.
std::string request_problem(const request& r) {
  if (!is_token(r.method))
    return "the method '" + r.method + "' is not an HTTP token";
  for (char c : r.target) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f)
      return "the target contains a space or a control character";
  }
  for (const auto& [name, value] : r.headers) {
    if (!is_token(name))
      return "the header name '" + name + "' is not an HTTP token";
    for (char c : value)
      if (c == '\r' || c == '\n' || c == '\0')
        return "the value of header '" + name +
               "' contains a CR, LF or NUL character";
  }
  return {};
}

/// Where a response's header fields live: a block the connection keeps,
/// handed out front to back and taken back whole once the response has
/// been mapped (Beast otherwise allocates every field on the heap). A
/// header larger than the block spills into heap blocks, freed the same way.
class header_arena {
public:
  void* allocate(size_t n, size_t align) {
    size_t at = (used_ + align - 1) & ~(align - 1);
    if (at + n <= sizeof block_) {
      used_ = at + n;
      return block_ + at;
    }
    // operator new[] aligns for any fundamental type, which is all Beast's
    // field elements need.
    spill_.push_back(std::make_unique<char[]>(n));
    return spill_.back().get();
  }
  /// Only when nothing allocated here is in use any more.
  void reset() {
    used_ = 0;
    spill_.clear();
  }

private:
  alignas(std::max_align_t) char block_[4096];
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> spill_;
};

template <class T>
struct arena_allocator {
  using value_type = T;
  header_arena* arena;
  explicit arena_allocator(header_arena* a) noexcept : arena(a) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& o) noexcept : arena(o.arena) {}
  T* allocate(size_t n) {
    return static_cast<T*>(arena->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T*, size_t) noexcept {} // taken back by reset()
  template <class U>
  bool operator==(const arena_allocator<U>& o) const noexcept {
    return arena == o.arena;
  }
  template <class U>
  bool operator!=(const arena_allocator<U>& o) const noexcept {
    return arena != o.arena;
  }
};

using response_parser =
    http::response_parser<http::string_body, arena_allocator<char>>;
using response_message = response_parser::value_type;

/// Maps the wire to the normalized outcome, exactly once per response.
outcome to_outcome(response_message& res) {
  outcome o;
  o.status = static_cast<int>(res.result_int());
  o.substatus = parse_number<int>(res["x-ms-substatus"], 0);
  o.session_token = std::string(res["x-ms-session-token"]);
  o.retry_after_ms = parse_number<int64_t>(res["x-ms-retry-after-ms"], -1);
  o.continuation = std::string(res["x-ms-continuation"]);
  o.etag = std::string(res[http::field::etag]);
  o.content_path = std::string(res["x-ms-content-path"]);
  o.activity_id = std::string(res["x-ms-activity-id"]);
  o.request_charge = parse_number<double>(res["x-ms-request-charge"], 0.0);
  o.body = std::move(res.body());
  return o;
}

outcome failed(failure kind, std::string detail) {
  outcome o;
  o.error = kind;
  o.error_detail = std::move(detail);
  return o;
}

class client_core : public std::enable_shared_from_this<client_core> {
public:
  explicit client_core(http_client_options opts);
  ~client_core() { shutdown(); }

  client_core(const client_core&) = delete;
  client_core& operator=(const client_core&) = delete;

  void send(request req, http_client::callback cb);
  void shutdown();

  http_client_stats stats() const {
    return {requests_.load(),     opened_.load(), reused_.load(),
            stale_unsent_.load(), resent_.load(), resend_refused_.load()};
  }
  const std::string& tls_setup_error() const { return tls_error_; }

  // The connection side.
  const http_client_options& options() const { return opts_; }
  ssl::context& tls_context() { return tls_ctx_; }
  net::io_context& io() { return *ioc_; }
  /// Runs on an external io_loop, without threads of its own.
  bool loop_mode() const { return loop_ != nullptr; }
  /// Loop mode, on the loop thread, not inside another inline start: a
  /// connection may start its job right away instead of posting it.
  bool may_start_inline() const {
    return loop_ && inline_starts_ == 0 && loop_->on_loop_thread();
  }
  /// Counts inline starts in progress (loop thread only): a start that
  /// fails at once and hands the slot to the next queued job would
  /// otherwise recurse once per queued job.
  struct inline_start_scope {
    explicit inline_start_scope(client_core& c) : core(c) {
      ++core.inline_starts_;
    }
    ~inline_start_scope() { --core.inline_starts_; }
    client_core& core;
  };
  bool stopping() const { return stopping_flag_.load(); }
  void count_opened() { ++opened_; }
  void count_reused() { ++reused_; }
  uint64_t next_connection_id() { return ++connection_ids_; }
  void count_stale_unsent() { ++stale_unsent_; }
  void count_resent() { ++resent_; }
  void count_resend_refused() { ++resend_refused_; }

  /// Calls the job's callback unless it already ran. Never under a lock.
  void complete(const job_ptr& j, outcome o);

  /// A connection finished its job; a reusable one takes the next queued job
  /// or goes idle, a dead one gives its slot back (or to the next job).
  void release(const connection_ptr& c, bool reusable);

  /// A kept-alive socket was dead: run `j` (again, or for the first time)
  /// on a fresh connection that inherits the dead connection's slot.
  void retry(const connection_ptr& dead, job_ptr j);

  /// Live connections (loop mode: what a driverless shutdown waits for).
  size_t live_connections() {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    return live_conns_.size();
  }

  void forget(const connection_base* c) {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    live_conns_.erase(c);
  }

private:
  void post_complete(const job_ptr& j, outcome o) {
    net::post(*ioc_,
              [self = shared_from_this(), j, o = std::move(o)]() mutable {
                self->complete(j, std::move(o));
              });
  }
  void send_now(request req, http_client::callback cb);
  void shutdown_threads();
  void shutdown_on_loop();
  void stop_step();
  connection_ptr make_connection_locked(const pool_ptr& p);
  /// The connection that is to run `j` (started by the caller once the lock
  /// is released), or null when `j` waits in the pool's queue.
  connection_ptr dispatch_locked(const pool_ptr& p, const job_ptr& j);
  static job_ptr pop_waiting_locked(endpoint_pool& p);
  void on_queue_timeout(const pool_ptr& p, const job_ptr& j);

  // Member order is destruction order, reversed: containers holding sockets
  // or timers go before ioc_, what connection destructors touch after it.
  http_client_options opts_;
  std::string tls_error_;
  ssl::context tls_ctx_{ssl::context::tls_client};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> opened_{0};
  std::atomic<uint64_t> reused_{0};
  std::atomic<uint64_t> connection_ids_{0};
  std::atomic<uint64_t> stale_unsent_{0};
  std::atomic<uint64_t> resent_{0};
  std::atomic<uint64_t> resend_refused_{0};
  std::atomic<bool> stopping_flag_{false};
  std::mutex conns_mtx_;
  std::unordered_map<const connection_base*, std::weak_ptr<connection_base>>
      live_conns_;
  // Loop mode: the loop whose io_context this is (it outlives the core).
  // Thread mode: the core's own io_context.
  io_loop_ptr loop_;
  std::optional<net::io_context> own_ioc_;
  net::io_context* ioc_ = nullptr;
  int inline_starts_ = 0; // loop thread only
  std::mutex mtx_;
  bool stopping_ = false;
  std::map<std::string, pool_ptr> pools_;
  std::unordered_map<std::string, pool_ptr> pools_by_endpoint_;
  std::mutex jobs_mtx_;
  std::unordered_map<const job*, job_ptr> live_jobs_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>>
      guard_;
  std::vector<std::thread> threads_;
  bool shut_ = false;
  // Loop mode: the shutdown step (stop_step) ran.
  std::mutex step_mtx_;
  std::condition_variable step_cv_;
  bool step_started_ = false;
  bool step_done_ = false;
};

connection_base::connection_base(std::shared_ptr<client_core> core,
                                 pool_ptr pool)
    : core_(core), pool_(std::move(pool)), id_(core_->next_connection_id()) {}

connection_base::~connection_base() {
  core_->forget(this);
}

/// One socket: resolve, connect, (handshake), then one request at a time.
/// A connection that fails or is told to close is dropped, never reopened.
template <bool Tls>
class connection final : public connection_base {
public:
  using stream_type =
      std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>,
                         beast::tcp_stream>;

  connection(std::shared_ptr<client_core> core, pool_ptr pool)
      : connection_base(std::move(core), std::move(pool)),
        exec_(executor_for(*core_)), resolver_(exec_), timer_(exec_) {
    if constexpr (Tls)
      stream_.emplace(exec_, core_->tls_context());
    else
      stream_.emplace(exec_);
  }

  void start(job_ptr j) override {
    if (core_->may_start_inline()) {
      client_core::inline_start_scope scope{*core_};
      auto keep = self(); // a failing start may drop the last reference
      guarded([&] { on_start(std::move(j)); });
      return;
    }
    net::post(exec_, [self = self(), j = std::move(j)]() mutable {
      self->guarded([&] { self->on_start(std::move(j)); });
    });
  }

  void abort() override {
    net::post(exec_, [self = self()] { self->abort_now(); });
  }

  void abort_now() override {
    aborted_ = true;
    close();
  }

private:
  enum class phase { idle, resolve, connect, handshake, write, read };

  /// Thread mode: a strand per connection, handlers of one socket never run
  /// concurrently. Loop mode: one thread runs every handler, no strand.
  static net::any_io_executor executor_for(client_core& core) {
    if (core.loop_mode()) return core.io().get_executor();
    return net::make_strand(core.io());
  }

  std::shared_ptr<connection> self() {
    return std::static_pointer_cast<connection>(shared_from_this());
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(*stream_); }

  /// No exception leaves a handler: whatever throws fails the job.
  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      fail_with(failure::protocol, where() + e.what());
    } catch (...) {
      fail_with(failure::protocol, where() + "unknown exception");
    }
  }

  void on_start(job_ptr j) {
    job_ = std::move(j);
    timed_out_ = false;
    maybe_sent_ = false;
    if (aborted_ || core_->stopping())
      return fail(net::error::operation_aborted);
    if (!connected_) return resolve();
    if (idle_socket_closed()) {
      // Nothing of this request was written: a fresh connection takes it,
      // whatever its method.
      core_->count_stale_unsent();
      return retry_fresh();
    }
    write();
  }

  /// Before a request goes out on a kept-alive socket: did the server close
  /// it while it sat idle? Its FIN (or RST) is then already here, and a
  /// peek that does not wait reads end-of-stream (or the error). Bytes that
  /// came while nothing was asked (an unsolicited 408, a TLS close_notify)
  /// leave the socket just as unusable; for TLS that may, rarely, drop a
  /// healthy socket, which costs one connect. Consumes and sends nothing.
  /// A close that lands after this check is the race `on_unanswered`
  /// handles.
  bool idle_socket_closed() {
    if (!can_probe_) return false;
    if (buf_.size() > 0) return true;
    char byte = 0;
    error_code ec;
    lowest().socket().receive(net::buffer(&byte, 1), tcp::socket::message_peek,
                              ec);
    return ec != net::error::would_block && ec != net::error::try_again;
  }

  void resolve() {
    phase_ = phase::resolve;
    if constexpr (Tls) {
      if (auto err = configure_tls(); !err.empty())
        return fail_with(failure::tls, where() + err);
    }
    const auto& u = pool_->u;
    error_code ec;
    auto addr = net::ip::make_address(u.host, ec);
    watch_deadline();
    if (!ec) {
      // An IP literal needs no resolver round trip.
      phase_ = phase::connect;
      lowest().async_connect(tcp::endpoint{addr, u.port},
                             [self = self()](error_code ec) {
                               self->guarded([&] { self->on_connect(ec); });
                             });
      return;
    }
    resolver_.async_resolve(
        u.host, std::to_string(u.port),
        [self = self()](error_code ec, tcp::resolver::results_type results) {
          self->guarded([&] { self->on_resolve(ec, results); });
        });
  }

  void on_resolve(error_code ec, const tcp::resolver::results_type& results) {
    if (ec) return fail(ec);
    phase_ = phase::connect;
    lowest().async_connect(
        results, [self = self()](error_code ec, const tcp::endpoint&) {
          self->guarded([&] { self->on_connect(ec); });
        });
  }

  void on_connect(error_code ec) {
    if (ec) return fail(ec);
    connected_ = true;
    core_->count_opened();
    // Only the idle probe reads synchronously; asynchronous operations do
    // not depend on this mode.
    error_code nb;
    lowest().socket().non_blocking(true, nb);
    can_probe_ = !nb;
    if constexpr (Tls) {
      phase_ = phase::handshake;
      stream_->async_handshake(ssl::stream_base::client,
                               [self = self()](error_code ec) {
                                 self->guarded([&] { self->on_handshake(ec); });
                               });
    } else {
      write();
    }
  }

  void on_handshake(error_code ec) {
    if (ec) return fail(ec);
    write();
  }

  void write() {
    phase_ = phase::write;
    reused_attempt_ = served_ > 0;
    build_request();
    if (reused_attempt_) core_->count_reused();
    watch_deadline();
    maybe_sent_ = true;
    net::async_write(*stream_, net::buffer(wire_),
                     [self = self()](error_code ec, std::size_t n) {
                       self->guarded([&] { self->on_write(ec, n); });
                     });
  }

  /// The request target is `request::target` as given; of the endpoint only
  /// scheme, host and port are used (a base path in the endpoint URL is
  /// ignored). Caller headers go in verbatim, in their order; Host,
  /// User-Agent ("georoute/<version>"), Content-Length, Connection and
  /// Transfer-Encoding are the client's (a caller's are left out). The
  /// request is written into one buffer that the connection keeps between
  /// requests: no allocation per header, and none at all once the buffer
  /// has grown to the largest request.
  /// `request_problem` has refused what could not be written safely.
  void build_request() {
    const auto& r = job_->req;
    head_ = r.method == "HEAD";
    const auto& host = pool_->host_header;
    auto agent = user_agent();
    size_t size = r.method.size() + r.target.size() + host.size() +
                  agent.size() + r.body.size() + 80;
    for (const auto& [name, value] : r.headers)
      size += name.size() + value.size() + 4;
    wire_.clear();
    wire_.reserve(size);
    wire_ += r.method;
    wire_ += ' ';
    if (r.target.empty())
      wire_ += '/';
    else
      wire_ += r.target;
    wire_ += " HTTP/1.1\r\nHost: ";
    wire_ += host;
    wire_ += "\r\nUser-Agent: ";
    wire_ += agent;
    wire_ += "\r\n";
    for (const auto& [name, value] : r.headers) {
      if (client_owned(name)) continue;
      wire_ += name;
      wire_ += ": ";
      wire_ += value;
      wire_ += "\r\n";
    }
    // What Beast's prepare_payload writes: a length for a body, and for
    // an empty one only where a body is expected.
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" ||
        r.method == "OPTIONS") {
      char digits[24];
      auto [end, ec] =
          std::to_chars(digits, digits + sizeof digits, r.body.size());
      (void)ec;
      wire_ += "Content-Length: ";
      wire_.append(digits, end);
      wire_ += "\r\n";
    }
    wire_ += "\r\n";
    wire_ += r.body;
  }

  void on_write(error_code ec, std::size_t written) {
    // On plain TCP a failed write that moved 0 bytes handed nothing to the
    // kernel: provably unsent. Over TLS the stream reports 0 on any error,
    // even after some records went out, so it proves nothing there.
    if (ec && written == 0 && !Tls) maybe_sent_ = false;
    if (ec) return unanswered(ec, false) ? on_unanswered(ec) : fail(ec);
    phase_ = phase::read;
    const auto& opts = core_->options();
    parser_.reset();
    arena_.reset();
    parser_.emplace(std::piecewise_construct, std::make_tuple(),
                    std::make_tuple(arena_allocator<char>{&arena_}));
    parser_->body_limit(static_cast<std::uint64_t>(opts.max_response_body));
    parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(
        opts.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    if (head_) parser_->skip(true);
    // Header first, then body. Beast 1.74's eager parsing (what async_read
    // does) loses the body_limit error for a Content-Length over the limit
    // when body bytes arrive in the same buffer as the header;
    // async_read_header parses non-eagerly and reports it.
    http::async_read_header(*stream_, buf_, *parser_,
                            [self = self()](error_code ec, std::size_t) {
                              self->guarded([&] { self->on_header(ec); });
                            });
  }

  void on_header(error_code ec) {
    if (ec)
      return unanswered(ec, parser_->got_some()) ? on_unanswered(ec) : fail(ec);
    if (parser_->is_done()) return on_read({});
    auto length = parser_->content_length();
    if (length && *length > core_->options().max_response_body)
      return fail(http::error::body_limit);
    http::async_read(*stream_, buf_, *parser_,
                     [self = self()](error_code ec, std::size_t) {
                       self->guarded([&] { self->on_read(ec); });
                     });
  }

  void on_read(error_code ec) {
    if (ec)
      return unanswered(ec, parser_->got_some()) ? on_unanswered(ec) : fail(ec);
    auto& res = parser_->get();
    bool keep = res.keep_alive() && !aborted_;
    auto o = to_outcome(res);
    o.connection = id_;
    o.connection_served = served_;
    ++served_;
    parser_.reset();
    auto j = std::move(job_);
    phase_ = phase::idle;
    if (!keep) close();
    // Release before the callback: a caller that sends its next request
    // from the callback (or right after it) finds this connection idle.
    release(keep);
    core_->complete(j, std::move(o));
  }

  /// A reused socket closed under the request: the write failed, or the
  /// read saw the close before any response byte. Usually the server closed
  /// it while idle and this request raced the close; but a server may also
  /// have read and applied the request and then closed without answering,
  /// and from here the two look the same. Once per job, never after a
  /// response byte, never after the deadline.
  bool unanswered(const error_code& ec, bool got_some) const {
    return reused_attempt_ && !got_some && !job_->retried && !timed_out_ &&
           !aborted_ && !core_->stopping() && ec != beast::error::timeout &&
           is_peer_closed(ec);
  }

  /// Sends the request again on a fresh connection when that cannot apply
  /// it twice (`resend_after_close`); otherwise completes it as a reset
  /// that may have been applied.
  void on_unanswered(const error_code& ec) {
    auto progress =
        maybe_sent_ ? send_progress::maybe_sent : send_progress::unsent;
    if (resend_after_close(job_->req, progress)) {
      if (progress == send_progress::unsent)
        core_->count_stale_unsent();
      else
        core_->count_resent();
      return retry_fresh();
    }
    core_->count_resend_refused();
    fail_with(failure::reset,
              where() + ec.message() +
                  " (the kept-alive connection closed after the request "
                  "was sent and before any response byte: the server may "
                  "have applied it, so it is not sent again)");
  }

  void retry_fresh() {
    close();
    auto j = std::move(job_);
    j->retried = true;
    phase_ = phase::idle;
    released_ = true; // the slot goes to the fresh connection
    core_->retry(shared_from_this(), std::move(j));
  }

  void fail(const error_code& ec) {
    auto [kind, detail] = classify(ec);
    fail_with(kind, std::move(detail));
  }

  void fail_with(failure kind, std::string detail) {
    close();
    auto j = std::move(job_);
    phase_ = phase::idle;
    auto o = failed(kind, std::move(detail));
    o.request_sent = maybe_sent_;
    o.connection = id_;
    o.connection_served = served_;
    maybe_sent_ = false;
    release(false);
    if (j) core_->complete(j, std::move(o));
  }

  void release(bool reusable) {
    if (released_) return;
    if (!reusable) released_ = true;
    core_->release(shared_from_this(), reusable);
  }

  std::string where() const {
    const char* verb = "request to";
    switch (phase_) {
    case phase::resolve:
      verb = "resolve";
      break;
    case phase::connect:
      verb = "connect to";
      break;
    case phase::handshake:
      verb = "TLS handshake with";
      break;
    case phase::write:
      verb = "write to";
      break;
    case phase::read:
      verb = "read from";
      break;
    case phase::idle:
      break;
    }
    return std::string{verb} + " " + pool_->authority + ": ";
  }

  std::pair<failure, std::string> classify(const error_code& ec) {
    if (aborted_ || core_->stopping()) return {failure::reset, shut_down_text};
    auto at = where();
    if (timed_out_ || ec == beast::error::timeout ||
        ec == net::error::timed_out)
      return {failure::timeout,
              at + "deadline of " +
                  std::to_string(job_ ? job_->req.timeout.count() : 0) +
                  " ms expired"};
    switch (phase_) {
    case phase::resolve:
      return {failure::dns, at + ec.message()};
    // Whatever keeps the TCP connect from succeeding (refused,
    // unreachable) means "nobody is listening there".
    case phase::connect:
      return {failure::refused, at + ec.message()};
    case phase::handshake:
      return {failure::tls, at + tls_detail(ec)};
    default:
      break;
    }
    const auto& opts = core_->options();
    if (ec == http::error::body_limit)
      return {failure::body_too_large,
              at + "response body exceeds the limit of " +
                  std::to_string(opts.max_response_body) + " bytes"};
    if (ec == http::error::header_limit)
      return {failure::protocol,
              at + "response header block exceeds the limit of " +
                  std::to_string(opts.max_header_bytes) + " bytes"};
    // A truncated body (partial_message) is the peer closing mid-exchange,
    // not malformed HTTP: it is reported as reset, like an RST, and said so
    // (Beast's own text is just "partial message"; bad-input table,
    // `integration.BadInput.TruncatedBody_*`).
    if (ec == http::error::partial_message)
      return {failure::reset,
              at +
                  "the connection closed before the whole response arrived "
                  "(truncated response: " +
                  ec.message() + ")"};
    if (is_peer_closed(ec)) return {failure::reset, at + ec.message()};
    if (is_http_error(ec)) return {failure::protocol, at + ec.message()};
    if (is_tls_error(ec)) return {failure::tls, at + ec.message()};
    return {failure::reset, at + ec.message()};
  }

  std::string tls_detail(const error_code& ec) {
    std::string text = ec.message();
    if constexpr (Tls) {
      auto result = SSL_get_verify_result(stream_->native_handle());
      if (result != X509_V_OK)
        text += std::string{" ("} + X509_verify_cert_error_string(result) + ")";
    }
    return text;
  }

  /// SNI for host names, and OpenSSL's own host (or IP) check of the peer
  /// certificate. This is what ssl::host_name_verification does, with
  /// OpenSSL's "hostname mismatch" in the error instead of a bare failure.
  std::string configure_tls() {
    if constexpr (Tls) {
      const auto& host = pool_->u.host;
      SSL* s = stream_->native_handle();
      bool ip = is_ip_literal(host);
      if (!ip && SSL_set_tlsext_host_name(s, host.c_str()) != 1)
        return "cannot set SNI to '" + host + "'";
      X509_VERIFY_PARAM* param = SSL_get0_param(s);
      X509_VERIFY_PARAM_set_hostflags(param,
                                      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      int ok =
          ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
             : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
      if (ok != 1) return "cannot set the expected peer name '" + host + "'";
      error_code ec;
      stream_->set_verify_mode(ssl::verify_peer, ec);
      if (ec) return "cannot enable peer verification: " + ec.message();
    }
    return {};
  }

  /// The deadline of the job, from resolve to the last response byte, on
  /// one timer per connection (the tcp_stream itself never has an expiry:
  /// it would arm and cancel a timer for every socket operation, three per
  /// request). The timer is moved only when this job's deadline is earlier
  /// than the wait already pending: requests with the same timeout, one
  /// after another, leave it alone, and it wakes once per timeout period to
  /// wait again for the deadline of the job it then finds.
  void watch_deadline() {
    auto d = job_->deadline;
    if (wait_until_ <= d) return;
    wait_until_ = d;
    timer_.expires_at(d);
    timer_.async_wait([weak = std::weak_ptr<connection_base>(
                           shared_from_this())](error_code ec) {
      if (ec == net::error::operation_aborted) return; // moved or closed
      if (auto s = weak.lock())
        static_cast<connection&>(*s).guarded(
            [&] { static_cast<connection&>(*s).on_deadline_timer(); });
    });
  }

  void on_deadline_timer() {
    auto now = steady::now();
    // A wait that expired just as the timer was moved to an earlier
    // deadline still ahead: the new wait is pending.
    if (timer_.expiry() > now) return;
    wait_until_ = steady::time_point::max();
    if (!job_ || phase_ == phase::idle) return;
    if (now < job_->deadline) return watch_deadline();
    // The pending step ends with operation_aborted, reported as a timeout
    // (timed_out_). Closing, not cancelling: a connect over several
    // resolved addresses only stops at a closed socket.
    timed_out_ = true;
    resolver_.cancel();
    lowest().close();
  }

  void cancel_timer() {
    wait_until_ = steady::time_point::max();
    try {
      timer_.cancel();
    } catch (...) { // cancel() only throws on broken timer queues
    }
  }

  void close() {
    cancel_timer();
    resolver_.cancel();
    lowest().close();
    connected_ = false;
    buf_.consume(buf_.size());
  }

  net::any_io_executor exec_;
  tcp::resolver resolver_;
  net::steady_timer timer_; ///< the job's deadline (watch_deadline)
  steady::time_point wait_until_ = steady::time_point::max();
  std::optional<stream_type> stream_;
  beast::flat_buffer buf_;
  std::string wire_; ///< the request as written, kept between requests
  bool head_ = false;
  header_arena arena_; ///< the fields of the response being read
  std::optional<response_parser> parser_;
  job_ptr job_;
  phase phase_ = phase::idle;
  uint64_t served_ = 0;
  bool connected_ = false;
  bool reused_attempt_ = false;
  /// Bytes of the current request may have reached the socket.
  bool maybe_sent_ = false;
  /// The socket is in non-blocking mode, so the idle probe cannot block.
  bool can_probe_ = false;
  bool timed_out_ = false;
  bool aborted_ = false;
  bool released_ = false;
};

client_core::client_core(http_client_options opts)
    : opts_(std::move(opts)), loop_(std::move(opts_.loop)) {
  opts_.loop = nullptr;
  if (loop_)
    ioc_ = &io_context_of(*loop_);
  else
    ioc_ = &own_ioc_.emplace();
  opts_.max_connections_per_endpoint =
      std::max<size_t>(1, opts_.max_connections_per_endpoint);
  opts_.io_threads = std::max<size_t>(1, opts_.io_threads);
  error_code ec;
  tls_ctx_.set_options(ssl::context::default_workarounds |
                           ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                       ec);
  tls_ctx_.set_verify_mode(ssl::verify_peer, ec);
  if (ec) tls_error_ = "cannot enable TLS peer verification: " + ec.message();
  if (!opts_.tls_ca_file.empty()) {
    tls_ctx_.load_verify_file(opts_.tls_ca_file, ec);
    if (ec) {
      std::error_code fs_ec;
      bool exists = std::filesystem::is_regular_file(opts_.tls_ca_file, fs_ec);
      tls_error_ = "cannot load TLS CA file '" + opts_.tls_ca_file + "': " +
                   (exists ? "no PEM certificate in it (" + ec.message() + ")"
                           : std::string{"no such file"}) +
                   "; check tls_ca_file";
    }
  } else {
    tls_ctx_.set_default_verify_paths(ec);
    if (ec)
      tls_error_ = "cannot load the system's TLS CA paths: " + ec.message();
  }
  if (loop_) return; // the loop's driver runs the handlers
  guard_.emplace(net::make_work_guard(*ioc_));
  for (size_t i = 0; i < opts_.io_threads; ++i)
    threads_.emplace_back([this] {
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (...) { // handlers are guarded; keep the thread alive anyway
        }
      }
    });
}

void client_core::send(request req, http_client::callback cb) {
  if (loop_ && !loop_->on_loop_thread()) {
    // Loop mode, another thread: the pool and the sockets belong to the
    // loop thread.
    net::post(*ioc_, [self = shared_from_this(), req = std::move(req),
                      cb = std::move(cb)]() mutable {
      self->send_now(std::move(req), std::move(cb));
    });
    return;
  }
  send_now(std::move(req), std::move(cb));
}

void client_core::send_now(request req, http_client::callback cb) {
  ++requests_;
  auto j = std::make_shared<job>();
  j->deadline = steady::now() + req.timeout;
  j->req = std::move(req);
  j->cb = std::move(cb);
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    live_jobs_.emplace(j.get(), j);
  }
  if (auto problem = request_problem(j->req); !problem.empty())
    return post_complete(
        j, failed(failure::protocol, "request not sent: " + problem));
  std::unique_lock<std::mutex> lock{mtx_};
  if (stopping_) {
    lock.unlock();
    return complete(j, failed(failure::reset, shut_down_text));
  }
  // The endpoint strings seen so far map straight to their pools: the URL
  // is parsed once per endpoint, not once per request.
  pool_ptr p;
  if (auto known = pools_by_endpoint_.find(j->req.endpoint);
      known != pools_by_endpoint_.end()) {
    p = known->second;
  } else {
    lock.unlock();
    auto parsed = parse_url(j->req.endpoint);
    if (auto* err = std::get_if<std::string>(&parsed))
      return post_complete(
          j, failed(failure::protocol,
                    "bad endpoint '" + j->req.endpoint + "': " + *err));
    auto& u = std::get<url>(parsed);
    lock.lock();
    if (stopping_) {
      lock.unlock();
      return complete(j, failed(failure::reset, shut_down_text));
    }
    auto& slot = pools_[endpoint_key(u)];
    if (!slot) {
      slot = std::make_shared<endpoint_pool>();
      slot->u = u;
      slot->authority = authority_of(u);
      slot->host_header = u.host_header();
    }
    p = slot;
    // Bounded: spellings of endpoints are few in practice, but a caller
    // could invent them without end.
    if (pools_by_endpoint_.size() < 4096)
      pools_by_endpoint_.emplace(j->req.endpoint, p);
  }
  if (p->u.tls() && !tls_error_.empty()) {
    lock.unlock();
    return post_complete(j, failed(failure::tls, tls_error_));
  }
  auto c = dispatch_locked(p, j);
  lock.unlock();
  if (c) c->start(j);
}

connection_ptr client_core::dispatch_locked(const pool_ptr& p,
                                            const job_ptr& j) {
  if (!p->idle.empty()) {
    auto c = std::move(p->idle.back());
    p->idle.pop_back();
    return c;
  }
  if (p->open < opts_.max_connections_per_endpoint) {
    ++p->open;
    return make_connection_locked(p);
  }
  {
    // All connections busy: wait in FIFO order, but not past the deadline.
    j->queued = true;
    p->waiting.push_back(j);
    j->queue_timer = std::make_unique<net::steady_timer>(*ioc_, j->deadline);
    j->queue_timer->async_wait([self = shared_from_this(), p, j](error_code) {
      self->on_queue_timeout(p, j);
    });
  }
  return nullptr;
}

void client_core::on_queue_timeout(const pool_ptr& p, const job_ptr& j) {
  size_t busy = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!j->queued) return; // a connection took it (or shutdown did)
    j->queued = false;
    auto& w = p->waiting;
    w.erase(std::remove(w.begin(), w.end(), j), w.end());
    busy = p->open;
  }
  complete(j, failed(failure::timeout,
                     "no free connection to " + p->authority + " within " +
                         std::to_string(j->req.timeout.count()) + " ms (" +
                         std::to_string(busy) + " busy)"));
}

job_ptr client_core::pop_waiting_locked(endpoint_pool& p) {
  while (!p.waiting.empty()) {
    auto j = std::move(p.waiting.front());
    p.waiting.pop_front();
    if (!j->queued) continue;
    j->queued = false;
    if (j->queue_timer) {
      try {
        j->queue_timer->cancel();
      } catch (...) { // the handler checks `queued` anyway
      }
    }
    return j;
  }
  return nullptr;
}

connection_ptr client_core::make_connection_locked(const pool_ptr& p) {
  connection_ptr c;
  if (p->u.tls())
    c = std::make_shared<connection<true>>(shared_from_this(), p);
  else
    c = std::make_shared<connection<false>>(shared_from_this(), p);
  std::lock_guard<std::mutex> guard{conns_mtx_};
  live_conns_.emplace(c.get(), c);
  return c;
}

void client_core::release(const connection_ptr& c, bool reusable) {
  connection_ptr runner;
  job_ptr next;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    const auto& p = c->pool();
    if (stopping_) {
      // Shutdown aborts every live connection; only the count matters.
      --p->open;
      return;
    }
    next = pop_waiting_locked(*p);
    if (reusable) {
      if (next)
        runner = c;
      else
        p->idle.push_back(c);
    } else {
      --p->open;
      if (next) {
        ++p->open;
        runner = make_connection_locked(p);
      }
    }
  }
  if (runner) runner->start(std::move(next));
}

void client_core::retry(const connection_ptr& dead, job_ptr j) {
  connection_ptr fresh;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!stopping_)
      fresh = make_connection_locked(dead->pool());
    else
      --dead->pool()->open;
  }
  if (fresh) return fresh->start(std::move(j));
  complete(j, failed(failure::reset, shut_down_text));
}

void client_core::complete(const job_ptr& j, outcome o) {
  if (j->done.exchange(true)) return;
  job_ptr registered;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    auto i = live_jobs_.find(j.get());
    if (i != live_jobs_.end()) {
      registered = std::move(i->second);
      live_jobs_.erase(i);
    }
  }
  o.endpoint = j->req.endpoint;
  auto cb = std::move(j->cb);
  if (!cb) return;
  try {
    cb(std::move(o));
  } catch (...) { // a throwing callback must not take the io thread down
  }
}

void client_core::shutdown() {
  if (shut_) return;
  shut_ = true;
  if (loop_)
    shutdown_on_loop();
  else
    shutdown_threads();
}

void client_core::shutdown_threads() {
  std::vector<job_ptr> queued;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    stopping_flag_ = true;
    for (auto& [key, p] : pools_)
      while (auto j = pop_waiting_locked(*p))
        queued.push_back(std::move(j));
  }
  for (auto& j : queued)
    post_complete(j, failed(failure::reset, shut_down_text));
  std::vector<std::weak_ptr<connection_base>> conns;
  {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    for (auto& [ptr, weak] : live_conns_)
      conns.push_back(weak);
  }
  for (auto& weak : conns)
    if (auto c = weak.lock()) c->abort();
  conns.clear();
  // Without stop(): run() returns once every aborted step has completed.
  guard_.reset();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    // Idle sockets go while ioc_ is still alive. An idle connection and its
    // pool point at each other: break that cycle first.
    for (auto& [key, p] : pools_)
      p->idle.clear();
    pools_.clear();
    pools_by_endpoint_.clear();
  }
  // Safety net: nothing should be left, but every callback runs once.
  std::unordered_map<const job*, job_ptr> left;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    left.swap(live_jobs_);
  }
  for (auto& [ptr, j] : left)
    complete(j, failed(failure::reset, shut_down_text));
}

// Loop mode. The sockets belong to the loop's driver thread, so the work of
// shutting down (stop_step) runs there:
// - called on the loop thread (an actor or a completion dropped the last
//   reference): right here. The loop cannot be run from here (this frame may
//   be inside one of its handlers) nor waited for (it is this thread), and
//   it need not be: every job completes now, and the aborted handlers that
//   run later find their jobs done; they keep the core alive until then.
// - another thread while the loop runs: posted, and waited for (the loop
//   never blocks for long: a handler or a wake ends its sleep).
// - another thread and nobody drives the loop (the actor system ended
//   before the client): this thread becomes the driver, runs the step and
//   then the aborted handlers of its own connections, within a bound (a
//   resolve that is still waiting for DNS cannot be interrupted).
void client_core::shutdown_on_loop() {
  if (loop_->on_loop_thread()) return stop_step();
  net::post(*ioc_, [self = shared_from_this()] { self->stop_step(); });
  std::unique_lock<std::mutex> lock{step_mtx_};
  for (;;) {
    if (step_cv_.wait_for(lock, std::chrono::milliseconds{20},
                          [this] { return step_done_; }))
      return;
    lock.unlock();
    if (loop_->try_become_driver()) {
      stop_step(); // the posted one will find it done
      auto until = steady::now() + std::chrono::seconds{2};
      try {
        loop_->poll();
        while (live_connections() > 0 && steady::now() < until)
          loop_->run_one_until(
              std::min(until, steady::now() + std::chrono::milliseconds{10}));
      } catch (...) { // handlers are guarded; nothing to add here
      }
      loop_->stop_driving();
      return;
    }
    lock.lock();
  }
}

// On the loop's driver: what shutdown_threads does, without threads to join.
void client_core::stop_step() {
  {
    std::lock_guard<std::mutex> guard{step_mtx_};
    if (step_started_) return;
    step_started_ = true;
  }
  std::vector<job_ptr> queued;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    stopping_flag_ = true;
    for (auto& [key, p] : pools_)
      while (auto j = pop_waiting_locked(*p))
        queued.push_back(std::move(j));
  }
  for (auto& j : queued)
    complete(j, failed(failure::reset, shut_down_text));
  std::vector<std::weak_ptr<connection_base>> conns;
  {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    for (auto& [ptr, weak] : live_conns_)
      conns.push_back(weak);
  }
  for (auto& weak : conns)
    if (auto c = weak.lock()) c->abort_now();
  conns.clear();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [key, p] : pools_)
      p->idle.clear();
    pools_.clear();
    pools_by_endpoint_.clear();
  }
  std::unordered_map<const job*, job_ptr> left;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    left.swap(live_jobs_);
  }
  for (auto& [ptr, j] : left)
    complete(j, failed(failure::reset, shut_down_text));
  {
    std::lock_guard<std::mutex> guard{step_mtx_};
    step_done_ = true;
  }
  step_cv_.notify_all();
}

} // namespace

struct http_client::impl {
  explicit impl(http_client_options opts)
      : core(std::make_shared<client_core>(std::move(opts))) {}
  std::shared_ptr<client_core> core;
};

http_client::http_client(http_client_options opts)
    : impl_(std::make_unique<impl>(std::move(opts))) {}

http_client::~http_client() {
  impl_->core->shutdown();
}

void http_client::send(request req, callback cb) {
  impl_->core->send(std::move(req), std::move(cb));
}

http_client_stats http_client::stats() const {
  return impl_->core->stats();
}

const std::string& http_client::tls_setup_error() const {
  return impl_->core->tls_setup_error();
}

} // namespace georoute::transport

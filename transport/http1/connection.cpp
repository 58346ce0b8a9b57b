#include "georoute/transport/http1/connection.hpp"

#include "georoute/transport/outcome.hpp"
#include "georoute/transport/request_checks.hpp"
#include "georoute/transport/version.hpp"

#include <algorithm>
#include <charconv>
#include <exception>
#include <limits>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <tuple>

namespace georoute::transport::http1 {

using request_checks::client_owned;

connection_base::connection_base(std::shared_ptr<client_core> core,
                                 pool_ptr pool)
    : core_(core), pool_(std::move(pool)), id_(core_->next_connection_id()) {}

connection_base::~connection_base() {
  core_->forget(this);
}

template <bool Tls>
connection<Tls>::connection(std::shared_ptr<client_core> core, pool_ptr pool)
    : connection_base(std::move(core), std::move(pool)),
      exec_(executor_for(*core_)), resolver_(exec_), timer_(exec_) {
  if constexpr (Tls)
    stream_.emplace(exec_, core_->tls_context());
  else
    stream_.emplace(exec_);
}

template <bool Tls>
void connection<Tls>::start(job_ptr j) {
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

template <bool Tls>
void connection<Tls>::abort() {
  net::post(exec_, [self = self()] { self->abort_now(); });
}

template <bool Tls>
void connection<Tls>::abort_now() {
  aborted_ = true;
  close();
}

template <bool Tls>
net::any_io_executor connection<Tls>::executor_for(client_core& core) {
  if (core.loop_mode()) return core.io().get_executor();
  return net::make_strand(core.io());
}

template <bool Tls>
std::shared_ptr<connection<Tls>> connection<Tls>::self() {
  return std::static_pointer_cast<connection>(shared_from_this());
}

template <bool Tls>
beast::tcp_stream& connection<Tls>::lowest() {
  return beast::get_lowest_layer(*stream_);
}

template <bool Tls>
template <class F>
void connection<Tls>::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    fail_with(failure::protocol, where() + e.what());
  } catch (...) {
    fail_with(failure::protocol, where() + "unknown exception");
  }
}

template <bool Tls>
void connection<Tls>::on_start(job_ptr j) {
  job_ = std::move(j);
  job_->started = steady::now();
  job_->connected = {};
  job_->written = {};
  timed_out_ = false;
  maybe_sent_ = false;
  if (aborted_ || core_->stopping()) return fail(net::error::operation_aborted);
  if (!connected_) return resolve();
  if (idle_socket_closed()) {
    // Nothing of this request was written: a fresh connection takes it,
    // whatever its method.
    core_->count_stale_unsent();
    return retry_fresh();
  }
  write();
}

template <bool Tls>
bool connection<Tls>::idle_socket_closed() {
  if (!can_probe_) return false;
  if (buf_.size() > 0) return true;
  char byte = 0;
  error_code ec;
  lowest().socket().receive(net::buffer(&byte, 1), tcp::socket::message_peek,
                            ec);
  return ec != net::error::would_block && ec != net::error::try_again;
}

template <bool Tls>
void connection<Tls>::resolve() {
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

template <bool Tls>
void connection<Tls>::on_resolve(error_code ec,
                                 const tcp::resolver::results_type& results) {
  if (ec) return fail(ec);
  phase_ = phase::connect;
  lowest().async_connect(results,
                         [self = self()](error_code ec, const tcp::endpoint&) {
                           self->guarded([&] { self->on_connect(ec); });
                         });
}

template <bool Tls>
void connection<Tls>::on_connect(error_code ec) {
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
    if (job_) job_->connected = steady::now();
    write();
  }
}

template <bool Tls>
void connection<Tls>::on_handshake(error_code ec) {
  if (ec) return fail(ec);
  if (job_) job_->connected = steady::now();
  write();
}

template <bool Tls>
void connection<Tls>::write() {
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

template <bool Tls>
void connection<Tls>::build_request() {
  const auto& r = job_->req;
  head_ = r.method == "HEAD";
  const auto& host = pool_->host_header;
  auto agent = user_agent();
  size_t size = r.method.size() + r.target.size() + host.size() + agent.size() +
                r.body.size() + 80;
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

template <bool Tls>
void connection<Tls>::on_write(error_code ec, std::size_t written) {
  // On plain TCP a failed write that moved 0 bytes handed nothing to the
  // kernel: provably unsent. Over TLS the stream reports 0 on any error,
  // even after some records went out, so it proves nothing there.
  if (ec && written == 0 && !Tls) maybe_sent_ = false;
  if (ec) return unanswered(ec, false) ? on_unanswered(ec) : fail(ec);
  if (job_) job_->written = steady::now();
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

template <bool Tls>
void connection<Tls>::on_header(error_code ec) {
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

template <bool Tls>
void connection<Tls>::on_read(error_code ec) {
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

template <bool Tls>
bool connection<Tls>::unanswered(const error_code& ec, bool got_some) const {
  return reused_attempt_ && !got_some && !job_->retried && !timed_out_ &&
         !aborted_ && !core_->stopping() && ec != beast::error::timeout &&
         is_peer_closed(ec);
}

template <bool Tls>
void connection<Tls>::on_unanswered(const error_code& ec) {
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

template <bool Tls>
void connection<Tls>::retry_fresh() {
  close();
  auto j = std::move(job_);
  j->retried = true;
  phase_ = phase::idle;
  released_ = true; // the slot goes to the fresh connection
  core_->retry(shared_from_this(), std::move(j));
}

template <bool Tls>
void connection<Tls>::fail(const error_code& ec) {
  auto [kind, detail] = classify(ec);
  fail_with(kind, std::move(detail));
}

template <bool Tls>
void connection<Tls>::fail_with(failure kind, std::string detail) {
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

template <bool Tls>
void connection<Tls>::release(bool reusable) {
  if (released_) return;
  if (!reusable) released_ = true;
  core_->release(shared_from_this(), reusable);
}

template <bool Tls>
std::string connection<Tls>::where() const {
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

template <bool Tls>
std::pair<failure, std::string>
connection<Tls>::classify(const error_code& ec) {
  if (aborted_ || core_->stopping()) return {failure::reset, shut_down_text};
  auto at = where();
  if (timed_out_ || ec == beast::error::timeout || ec == net::error::timed_out)
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

template <bool Tls>
std::string connection<Tls>::tls_detail(const error_code& ec) {
  std::string text = ec.message();
  if constexpr (Tls) {
    auto result = SSL_get_verify_result(stream_->native_handle());
    if (result != X509_V_OK)
      text += std::string{" ("} + X509_verify_cert_error_string(result) + ")";
  }
  return text;
}

template <bool Tls>
std::string connection<Tls>::configure_tls() {
  if constexpr (Tls) {
    const auto& host = pool_->u.host;
    SSL* s = stream_->native_handle();
    bool ip = is_ip_literal(host);
    if (!ip && SSL_set_tlsext_host_name(s, host.c_str()) != 1)
      return "cannot set SNI to '" + host + "'";
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    X509_VERIFY_PARAM_set_hostflags(param,
                                    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    if (ok != 1) return "cannot set the expected peer name '" + host + "'";
    error_code ec;
    stream_->set_verify_mode(ssl::verify_peer, ec);
    if (ec) return "cannot enable peer verification: " + ec.message();
  }
  return {};
}

template <bool Tls>
void connection<Tls>::watch_deadline() {
  auto d = job_->deadline;
  if (wait_until_ <= d) return;
  wait_until_ = d;
  timer_.expires_at(d);
  timer_.async_wait([weak = std::weak_ptr<connection_base>(shared_from_this())](
                        error_code ec) {
    if (ec == net::error::operation_aborted) return; // moved or closed
    if (auto s = weak.lock())
      static_cast<connection&>(*s).guarded(
          [&] { static_cast<connection&>(*s).on_deadline_timer(); });
  });
}

template <bool Tls>
void connection<Tls>::on_deadline_timer() {
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

template <bool Tls>
void connection<Tls>::cancel_timer() {
  wait_until_ = steady::time_point::max();
  try {
    timer_.cancel();
  } catch (...) { // cancel() only throws on broken timer queues
  }
}

template <bool Tls>
void connection<Tls>::close() {
  cancel_timer();
  resolver_.cancel();
  lowest().close();
  connected_ = false;
  buf_.consume(buf_.size());
}

template class connection<true>;
template class connection<false>;

} // namespace georoute::transport::http1

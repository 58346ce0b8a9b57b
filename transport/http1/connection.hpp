#pragma once

// connection<Tls>: one socket of an endpoint's pool, plain TCP or TLS. Its
// members are defined in connection.cpp, which instantiates it for both.

#include "georoute/transport/http1/errors.hpp"
#include "georoute/transport/http1/pool.hpp"
#include "georoute/transport/http1/response.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace georoute::transport::http1 {

/// One socket: resolve, connect, (handshake), then one request at a time.
/// A connection that fails or is told to close is dropped, never reopened.
template <bool Tls>
class connection final : public connection_base {
public:
  using stream_type =
      std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>,
                         beast::tcp_stream>;

  connection(std::shared_ptr<client_core> core, pool_ptr pool);
  void start(job_ptr j) override;
  void abort() override;
  void abort_now() override;

private:
  enum class phase { idle, resolve, connect, handshake, write, read };

  /// Thread mode: a strand per connection, handlers of one socket never run
  /// concurrently. Loop mode: one thread runs every handler, no strand.
  static net::any_io_executor executor_for(client_core& core);

  std::shared_ptr<connection> self();
  beast::tcp_stream& lowest();

  /// No exception leaves a handler: whatever throws fails the job.
  template <class F>
  void guarded(F&& f);

  void on_start(job_ptr j);

  /// Before a request goes out on a kept-alive socket: did the server close
  /// it while it sat idle? Its FIN (or RST) is then already here, and a
  /// peek that does not wait reads end-of-stream (or the error). Bytes that
  /// came while nothing was asked (an unsolicited 408, a TLS close_notify)
  /// leave the socket just as unusable; for TLS that may, rarely, drop a
  /// healthy socket, which costs one connect. Consumes and sends nothing.
  /// A close that lands after this check is the race `on_unanswered`
  /// handles.
  bool idle_socket_closed();

  void resolve();
  void on_resolve(error_code ec, const tcp::resolver::results_type& results);
  void on_connect(error_code ec);
  void on_handshake(error_code ec);
  void write();

  /// The request target is `request::target` as given; of the endpoint only
  /// scheme, host and port are used (a base path in the endpoint URL is
  /// ignored). Caller headers go in verbatim, in their order; Host,
  /// User-Agent ("georoute/<version>"), Content-Length, Connection and
  /// Transfer-Encoding are the client's (a caller's are left out). The
  /// request is written into one buffer that the connection keeps between
  /// requests: no allocation per header, and none at all once the buffer
  /// has grown to the largest request.
  /// `request_problem` has refused what could not be written safely.
  void build_request();

  void on_write(error_code ec, std::size_t written);
  void on_header(error_code ec);
  void on_read(error_code ec);

  /// A reused socket closed under the request: the write failed, or the
  /// read saw the close before any response byte. Usually the server closed
  /// it while idle and this request raced the close; but a server may also
  /// have read and applied the request and then closed without answering,
  /// and from here the two look the same. Once per job, never after a
  /// response byte, never after the deadline.
  bool unanswered(const error_code& ec, bool got_some) const;

  /// Sends the request again on a fresh connection when that cannot apply
  /// it twice (`resend_after_close`); otherwise completes it as a reset
  /// that may have been applied.
  void on_unanswered(const error_code& ec);

  void retry_fresh();
  void fail(const error_code& ec);
  void fail_with(failure kind, std::string detail);
  void release(bool reusable);
  std::string where() const;
  std::pair<failure, std::string> classify(const error_code& ec);
  std::string tls_detail(const error_code& ec);

  /// SNI for host names, and OpenSSL's own host (or IP) check of the peer
  /// certificate. This is what ssl::host_name_verification does, with
  /// OpenSSL's "hostname mismatch" in the error instead of a bare failure.
  std::string configure_tls();

  /// The deadline of the job, from resolve to the last response byte, on
  /// one timer per connection (the tcp_stream itself never has an expiry:
  /// it would arm and cancel a timer for every socket operation, three per
  /// request). The timer is moved only when this job's deadline is earlier
  /// than the wait already pending: requests with the same timeout, one
  /// after another, leave it alone, and it wakes once per timeout period to
  /// wait again for the deadline of the job it then finds.
  void watch_deadline();

  void on_deadline_timer();
  void cancel_timer();
  void close();

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

extern template class connection<true>;
extern template class connection<false>;

} // namespace georoute::transport::http1

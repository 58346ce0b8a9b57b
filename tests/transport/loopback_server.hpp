#pragma once

// A small Boost.Beast HTTP/1.1 server for the transport tests. It listens on
// 127.0.0.1 with an ephemeral port (never another address), optionally over
// TLS, and answers each request with what a test's handler returns: a normal
// response (status, headers, body, delay, Connection: close) or a failure
// injected on the wire (reset mid-body, truncated body, silent close of a
// kept-alive socket, a close with no answer at all, raw bytes). It counts
// connections and requests so that tests can assert on pooling. Header-only
// so that the test binary globbing `*_test.cpp` needs no extra source.

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace georoute::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

/// What the server does with one request.
struct reply {
  enum class mode {
    normal,           ///< a complete response
    reset_mid_body,   ///< headers and part of the body, 50 ms, an RST
    truncated_body,   ///< Content-Length 1000, 100 bytes, then a FIN
    close_silently,   ///< a keep-alive response, then close the socket
    close_unanswered, ///< read the request, run the handler, close the
                      ///< socket without a byte of response
    raw,              ///< write `raw` verbatim, then close
  };
  mode how = mode::normal;
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds delay{0};
  bool connection_close = false;
  std::string raw;
};

using server_request = http::request<http::string_body>;
using server_handler = std::function<reply(const server_request&)>;

/// Shared between the server and its sessions, so that no session ever
/// points into a destroyed server.
struct server_state {
  server_handler handler;
  std::atomic<int> accepted{0};
  std::atomic<int> open{0};
  std::atomic<int> max_open{0};
  std::atomic<int> closed{0};
  std::atomic<int> requests{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::mutex mtx;
  std::vector<server_request> received;

  static void raise_max(std::atomic<int>& max, int value) {
    int seen = max.load();
    while (value > seen && !max.compare_exchange_weak(seen, value)) {
    }
  }
};

template <bool Tls>
class server_session
    : public std::enable_shared_from_this<server_session<Tls>> {
public:
  using stream_type =
      std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>,
                         beast::tcp_stream>;

  server_session(tcp::socket socket, std::shared_ptr<server_state> st,
                 std::shared_ptr<ssl::context> tls)
      : st_(std::move(st)), tls_(std::move(tls)),
        timer_(socket.get_executor()) {
    if constexpr (Tls)
      stream_.emplace(std::move(socket), *tls_);
    else
      stream_.emplace(std::move(socket));
    server_state::raise_max(st_->max_open, ++st_->open);
  }

  ~server_session() { finish(); }

  void run() {
    if constexpr (Tls) {
      lowest().expires_after(std::chrono::seconds(10));
      stream_->async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) return self->finish();
            self->read();
          });
    } else {
      read();
    }
  }

private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(*stream_); }

  void read() {
    req_ = {};
    lowest().expires_after(std::chrono::seconds(30));
    http::async_read(
        *stream_, buf_, req_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
          self->on_read(ec);
        });
  }

  void on_read(beast::error_code ec) {
    if (ec) return finish();
    ++st_->requests;
    server_state::raise_max(st_->max_in_flight, ++st_->in_flight);
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      st_->received.push_back(req_);
    }
    auto r = st_->handler(req_);
    if (r.delay.count() > 0) {
      timer_.expires_after(r.delay);
      timer_.async_wait(
          [self = this->shared_from_this(), r](beast::error_code ec) {
            if (ec) return self->finish();
            self->respond(r);
          });
    } else {
      respond(r);
    }
  }

  void respond(const reply& r) {
    lowest().expires_after(std::chrono::seconds(30));
    switch (r.how) {
    case reply::mode::normal:
    case reply::mode::close_silently: {
      auto res = std::make_shared<http::response<http::string_body>>(
          static_cast<http::status>(r.status), req_.version());
      for (const auto& [name, value] : r.headers)
        res->insert(name, value);
      res->body() = r.body;
      res->keep_alive(req_.keep_alive() && !r.connection_close);
      res->prepare_payload();
      bool close_after =
          r.how == reply::mode::close_silently || !res->keep_alive();
      http::async_write(*stream_, *res,
                        [self = this->shared_from_this(), res,
                         close_after](beast::error_code ec, std::size_t) {
                          --self->st_->in_flight;
                          if (ec || close_after) return self->finish();
                          self->read();
                        });
      return;
    }
    case reply::mode::reset_mid_body:
      return write_raw("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" +
                           std::string(100, 'x'),
                       true);
    case reply::mode::truncated_body:
      return write_raw("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" +
                           std::string(100, 'x'),
                       false);
    case reply::mode::close_unanswered:
      --st_->in_flight;
      return finish();
    case reply::mode::raw:
      return write_raw(r.raw, false);
    }
  }

  void write_raw(std::string bytes, bool reset) {
    auto data = std::make_shared<std::string>(std::move(bytes));
    net::async_write(*stream_, net::buffer(*data),
                     [self = this->shared_from_this(), data,
                      reset](beast::error_code, std::size_t) {
                       --self->st_->in_flight;
                       if (reset) return self->reset_soon();
                       beast::error_code ig;
                       self->lowest().socket().shutdown(
                           tcp::socket::shutdown_send, ig);
                       self->finish();
                     });
  }

  /// An RST after the client has surely read the bytes sent before it (an
  /// RST that overtakes unread data makes Linux drop that data).
  void reset_soon() {
    timer_.expires_after(std::chrono::milliseconds(50));
    timer_.async_wait([self = this->shared_from_this()](beast::error_code) {
      beast::error_code ig;
      self->lowest().socket().set_option(net::socket_base::linger(true, 0), ig);
      self->finish();
    });
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    lowest().close();
    --st_->open;
    ++st_->closed;
  }

  std::shared_ptr<server_state> st_;
  std::shared_ptr<ssl::context> tls_;
  net::steady_timer timer_;
  std::optional<stream_type> stream_;
  beast::flat_buffer buf_;
  server_request req_;
  bool finished_ = false;
};

/// See the file comment. One io thread; handlers run on it.
class loopback_server {
public:
  /// `tls`: a tls_server context with certificate and key, or null for
  /// plain HTTP.
  explicit loopback_server(server_handler handler,
                           std::shared_ptr<ssl::context> tls = nullptr)
      : st_(std::make_shared<server_state>()), tls_(std::move(tls)) {
    st_->handler = std::move(handler);
    tcp::endpoint ep{net::ip::make_address("127.0.0.1"), 0};
    acceptor_.open(ep.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(net::socket_base::max_listen_connections);
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread{[this] { ioc_.run(); }};
  }

  ~loopback_server() {
    ioc_.stop();
    thread_.join();
  }

  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;

  uint16_t port() const { return port_; }

  /// "http://127.0.0.1:<port>/" (or https).
  std::string endpoint() const {
    return std::string{tls_ ? "https" : "http"} +
           "://127.0.0.1:" + std::to_string(port_) + "/";
  }

  int accepted() const { return st_->accepted; }
  int open() const { return st_->open; }
  int max_open() const { return st_->max_open; }
  int closed() const { return st_->closed; }
  int requests() const { return st_->requests; }
  int max_in_flight() const { return st_->max_in_flight; }

  std::vector<server_request> received() const {
    std::lock_guard<std::mutex> guard{st_->mtx};
    return st_->received;
  }

private:
  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec,
                                                          tcp::socket s) {
      if (ec) return;
      ++st_->accepted;
      if (tls_)
        std::make_shared<server_session<true>>(std::move(s), st_, tls_)->run();
      else
        std::make_shared<server_session<false>>(std::move(s), st_, tls_)->run();
      accept();
    });
  }

  std::shared_ptr<server_state> st_;
  std::shared_ptr<ssl::context> tls_;
  net::io_context ioc_{1};
  tcp::acceptor acceptor_{ioc_};
  uint16_t port_ = 0;
  std::thread thread_;
};

/// A loopback port that nobody listens on: bound, read, closed.
inline uint16_t closed_loopback_port() {
  net::io_context ioc;
  tcp::acceptor a{ioc};
  tcp::endpoint ep{net::ip::make_address("127.0.0.1"), 0};
  a.open(ep.protocol());
  a.bind(ep);
  auto port = a.local_endpoint().port();
  a.close();
  return port;
}

} // namespace georoute::testing

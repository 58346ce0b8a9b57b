#include "tests/bench/raw_client.hpp"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <thread>

namespace georoute::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

/// One keep-alive socket, one request in flight, until told to stop.
class raw_conn : public std::enable_shared_from_this<raw_conn> {
public:
  raw_conn(net::io_context& ioc, const http::request<http::empty_body>& req,
           event_log& log, size_t slot, const std::atomic<bool>& stopping)
      : sock_(ioc), req_(req), log_(log), slot_(slot), stopping_(stopping) {}

  void start(const net::ip::tcp::endpoint& ep) {
    start_us_ = log_.now_us();
    sock_.async_connect(ep, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->done(false);
      self->sock_.set_option(net::ip::tcp::no_delay(true), ec);
      self->write();
    });
  }

  void close() {
    beast::error_code ig;
    sock_.shutdown(net::ip::tcp::socket::shutdown_both, ig);
    sock_.close(ig);
  }

private:
  void write() {
    start_us_ = log_.now_us();
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
    if (stopping_.load(std::memory_order_relaxed)) return;
    log_.record(slot_, start_us_, log_.now_us(), good);
    if (good && res_.keep_alive()) return write();
    close(); // a broken connection ends its chain
  }

  net::ip::tcp::socket sock_;
  const http::request<http::empty_body>& req_;
  event_log& log_;
  size_t slot_;
  const std::atomic<bool>& stopping_;
  beast::flat_buffer buf_;
  http::response<http::string_body> res_;
  int64_t start_us_ = 0;
};

} // namespace

struct raw_load::impl {
  net::io_context ioc{1};
  http::request<http::empty_body> req;
  std::atomic<bool> stopping{false};
  std::vector<std::shared_ptr<raw_conn>> conns;
  std::thread thread;
};

raw_load::raw_load(raw_request r, size_t connections, event_log& log)
    : impl_(std::make_unique<impl>()) {
  impl_->req = {http::verb::get, r.target, 11};
  impl_->req.set(http::field::host,
                 r.host + ":" + std::to_string(static_cast<int>(r.port)));
  for (const auto& [name, value] : r.headers)
    impl_->req.set(name, value);
  impl_->req.keep_alive(true);
  net::ip::tcp::endpoint ep{net::ip::make_address(r.host), r.port};
  for (size_t i = 0; i < connections; ++i) {
    auto c = std::make_shared<raw_conn>(impl_->ioc, impl_->req, log, i,
                                        impl_->stopping);
    impl_->conns.push_back(c);
    c->start(ep);
  }
  impl_->thread = std::thread{[this] { impl_->ioc.run(); }};
}

void raw_load::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->stopping = true;
  net::post(impl_->ioc, [this] {
    for (auto& c : impl_->conns)
      c->close();
  });
  impl_->thread.join();
  impl_->conns.clear();
}

raw_load::~raw_load() {
  stop();
}

} // namespace georoute::bench

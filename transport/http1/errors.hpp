#pragma once

// The Beast and Asio names the HTTP/1.1 client is written with, and how it
// sorts the errors they report.

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <string>

namespace georoute::transport::http1 {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;
using error_code = beast::error_code;

/// The detail of a request completed because the client shuts down.
inline constexpr const char* shut_down_text = "client shut down";

/// An IP address, not a host name (no SNI for it).
inline bool is_ip_literal(const std::string& host) {
  error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

/// The peer closed the socket: the error a dead kept-alive socket produces.
inline bool is_peer_closed(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset ||
         ec == net::error::connection_aborted ||
         ec == net::error::broken_pipe || ec == net::error::not_connected ||
         ec == ssl::error::stream_truncated;
}

/// An error of Beast's HTTP parser or serializer.
inline bool is_http_error(const error_code& ec) {
  return ec.category() ==
         make_error_code(http::error::end_of_stream).category();
}

/// An error of OpenSSL or of the TLS stream.
inline bool is_tls_error(const error_code& ec) {
  return ec.category() == net::error::get_ssl_category() ||
         ec.category() == ssl::error::get_stream_category();
}

} // namespace georoute::transport::http1

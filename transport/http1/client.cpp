// http_client, the public face (transport/http_client.hpp): a handle on one
// client_core (pool.hpp).

#include "georoute/transport/http1/pool.hpp"
#include "georoute/transport/http_client.hpp"

#include <memory>
#include <utility>

namespace georoute::transport {

struct http_client::impl {
  explicit impl(http_client_options opts)
      : core(std::make_shared<http1::client_core>(std::move(opts))) {}
  std::shared_ptr<http1::client_core> core;
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

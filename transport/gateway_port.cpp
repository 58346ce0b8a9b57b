#include "georoute/transport/auth.hpp"
#include "georoute/transport/gateway_wire.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/port.hpp"

#include <chrono>

namespace georoute::transport {

namespace {

class gateway_port : public port {
public:
  gateway_port(std::shared_ptr<http_client> client, const std::string& key)
      : client_(std::move(client)) {
    if (key.empty()) return;
    auto parsed = parse_master_key(key);
    if (parsed) {
      signer_ = std::make_unique<hmac_signer>(*parsed);
      if (!signer_->error().empty())
        key_error_ = "the account key is not usable: " + signer_->error();
    } else {
      key_error_ = "the account key is not usable: " + parsed.error().what;
    }
  }

  void send(attempt a, completion done) override {
    if (!key_error_.empty() || a.proto != protocol::gateway) {
      outcome o;
      o.error = failure::protocol;
      o.error_detail = !key_error_.empty()
                           ? key_error_
                           : std::string{"the endpoint "} + a.endpoint +
                                 " speaks " + to_string(a.proto) +
                                 "; this port speaks the classic gateway";
      o.endpoint = std::move(a.endpoint);
      done(std::move(o));
      return;
    }
    auto req = to_gateway_request(std::move(a));
    if (signer_)
      signer_->sign(req, std::chrono::system_clock::now(), req.rid_based);
    client_->send(std::move(req), std::move(done));
  }

private:
  std::shared_ptr<http_client> client_;
  std::unique_ptr<hmac_signer> signer_;
  std::string key_error_;
};

} // namespace

port_ptr make_gateway_port(std::shared_ptr<http_client> client,
                           const std::string& key) {
  return std::make_shared<gateway_port>(std::move(client), key);
}

} // namespace georoute::transport

#include "georoute/actors/http_port.hpp"

#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"

#include <chrono>

namespace georoute {

namespace {

class beast_port : public http_port {
public:
  beast_port(std::shared_ptr<transport::http_client> client,
             const config::secret& key)
      : client_(std::move(client)) {
    if (!key.empty()) {
      auto parsed = transport::parse_master_key(key.reveal());
      if (parsed) {
        signer_ = std::make_unique<transport::hmac_signer>(*parsed);
        if (!signer_->error().empty())
          key_error_ = "the account key is not usable: " + signer_->error();
      } else {
        key_error_ = "the account key is not usable: " + parsed.error().what;
      }
    }
  }

  void send(transport::request req, completion done) override {
    if (!key_error_.empty()) {
      transport::outcome o;
      o.error = transport::failure::protocol;
      o.error_detail = key_error_;
      o.endpoint = req.endpoint;
      done(std::move(o));
      return;
    }
    if (signer_)
      signer_->sign(req, std::chrono::system_clock::now(), req.rid_based);
    client_->send(std::move(req), std::move(done));
  }

private:
  std::shared_ptr<transport::http_client> client_;
  std::unique_ptr<transport::hmac_signer> signer_;
  std::string key_error_;
};

} // namespace

http_port_ptr make_http_port(std::shared_ptr<transport::http_client> client,
                             const config::secret& key) {
  return std::make_shared<beast_port>(std::move(client), key);
}

} // namespace georoute

#include "georoute/actors/nats/fleet_link.hpp"

#include "georoute/actors/policy/fleet_subject.hpp"
#include "georoute/transport/nats/channel.hpp"

namespace georoute {

namespace {

class nats_link final : public fleet_link {
public:
  explicit nats_link(std::unique_ptr<nats_channel> ch) : ch_(std::move(ch)) {}

  bool publish(const std::string& subject,
               const std::string& payload) override {
    return ch_->publish(subject, payload);
  }

  bool connected() const override { return ch_->connected(); }

private:
  std::unique_ptr<nats_channel> ch_;
};

} // namespace

result<nats_fleet> make_nats_fleet_link(const config::settings& s) {
  const auto& f = s.fleet;
  if (!f.enabled)
    return problem{"georoute.fleet-health.enabled is false: no link to make"};
  nats_channel_options o;
  o.servers = f.servers;
  o.name = "georoute/" + f.reporter;
  o.nkey_public = f.nkey;
  o.nkey_seed_file = f.nkey_seed_file;
  o.ca_file = f.ca_file;
  o.cert_file = f.cert_file;
  o.key_file = f.key_file;
  o.subscribe_subject = fleet_subscription(f.fleet, fleet_account_token(s));
  o.max_payload = max_fleet_payload;
  auto inbox = std::make_shared<fleet_inbox>();
  auto ch = nats_channel::open(
      std::move(o),
      [inbox](nats_inbound in) {
        inbox->deliver(fleet_inbound{std::move(in.subject),
                                     std::move(in.payload), in.oversized});
      },
      [inbox](bool connected, const std::string&) {
        inbox->link_status(connected);
      });
  if (!ch) return problem{"georoute.fleet-health: " + ch.error().what};
  return nats_fleet{std::make_shared<nats_link>(std::move(*ch)), inbox};
}

} // namespace georoute

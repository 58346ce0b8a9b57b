#pragma once

// The NATS subjects of a fleet's region-health reports, as pure string
// functions (no NATS here: the channel in transport/nats/ only carries what
// these build and check).
//
//   georoute.h1.<fleet>.<acct>.<region>.<rid>
//
// `h1` is version 1 of the health protocol; `fleet` keeps deployments (and
// test runs) apart on a shared server; `acct` is the first DNS label of the
// account endpoint; `region` is the region's name squeezed to [a-z0-9]
// ("West US 2" -> "westus2"); `rid` is the reporter, the user the server
// authenticated. The server lets each user publish only on subjects ending
// in its own rid, so a receiver takes the reporter's identity from the
// subject and never from the payload.
//
// A token is non-empty and made of [a-z0-9_-] only: no '.', no wildcard, no
// white space, so a token can never widen a subject or a permission.

#include <optional>
#include <string>
#include <string_view>

namespace georoute {

/// `name` lower-cased with everything but [a-z0-9] left out: "West US 2" ->
/// "westus2". May be empty (a name of punctuation only).
std::string fleet_token(std::string_view name);

/// Whether `s` can stand as one token of a fleet subject: non-empty, only
/// [a-z0-9_-].
bool is_fleet_token(std::string_view s);

/// The subject a reporter publishes a claim about `region` on. `region` is a
/// region name and goes through `fleet_token`; `fleet`, `acct` and `rid` must
/// already be tokens. Empty when any of the four is not a token.
std::string fleet_subject(std::string_view fleet, std::string_view acct,
                          std::string_view region, std::string_view rid);

/// The region token of the ask a newcomer sends for its peers' claims. It
/// holds '_', so no region name's token (`fleet_token`: [a-z0-9]) is it.
inline constexpr std::string_view fleet_sync_token = "_sync";

/// The subject of that ask: "georoute.h1.<fleet>.<acct>._sync.<rid>"
/// (within the reporter's publish permission). Empty when a token is not
/// one.
std::string fleet_sync_subject(std::string_view fleet, std::string_view acct,
                               std::string_view rid);

/// What a receiver subscribes to for one account: "georoute.h1.<fleet>.
/// <acct>.>". Empty when `fleet` or `acct` is not a token.
std::string fleet_subscription(std::string_view fleet, std::string_view acct);

/// The server-side permissions of reporter `rid` (server_config.hpp):
/// publish on "georoute.h1.<fleet>.*.*.<rid>" only, subscribe to
/// "georoute.h1.<fleet>.>" only. Empty when a token is not one.
std::string fleet_publish_permission(std::string_view fleet,
                                     std::string_view rid);
std::string fleet_subscribe_permission(std::string_view fleet);

/// The variable tokens of a fleet subject.
struct fleet_subject_parts {
  std::string acct;
  std::string region;
  std::string rid;
};

/// {acct, region, rid} of `subject` when it is exactly
/// "georoute.h1.<fleet>.<acct>.<region>.<rid>" with this `fleet` and three
/// tokens (`is_fleet_token`); nothing otherwise.
std::optional<fleet_subject_parts> parse_fleet_subject(std::string_view subject,
                                                       std::string_view fleet);

} // namespace georoute

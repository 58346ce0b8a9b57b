#pragma once

// Pure decisions of the endpoint manager (.NET GlobalEndpointManager,
// src/Routing/GlobalEndpointManager.cs): whether an on-demand refresh fetches,
// joins the fetch in flight or is skipped; which endpoints the account-read
// sweep tries, in which order; and what changed between two account reads.

#include "georoute/actors/policy/model.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// What to do with a refresh request.
enum class refresh_action {
  fetch, ///< start a fetch
  join,  ///< wait for the fetch in flight
  skip,  ///< answer the current account without fetching
};

/// The refresh gate. A non-forced request within `min_interval` of the last
/// fetch start is skipped when an account is known; otherwise it joins the
/// fetch in flight or starts one. A forced request never skips.
refresh_action decide_refresh(bool force, bool fetch_in_flight,
                              bool account_known,
                              std::chrono::steady_clock::duration since_last,
                              std::chrono::steady_clock::duration min_interval);

/// The endpoints an account read tries, in order: the account (global)
/// endpoint, then the regional endpoints of the last known account —
/// preferred regions first (in preference order, names matched
/// case-insensitively), then the other readable and writable regions in
/// account order. No duplicates; the global endpoint appears once.
std::vector<std::string>
sweep_candidates(const std::string& global_endpoint,
                 const database_account* known,
                 const std::vector<std::string>& preferred_regions);

/// What changed between two account reads.
struct topology_change {
  bool first = false;                 ///< no previous account
  bool write_region_switched = false; ///< the first write region changed
  bool write_order_changed = false;
  bool multi_write_changed = false;
  std::vector<std::string> added;   ///< region names now readable
  std::vector<std::string> removed; ///< region names no longer readable
  bool endpoints_changed = false;   ///< a region's endpoint moved

  bool any() const {
    return first || write_region_switched || write_order_changed ||
           multi_write_changed || !added.empty() || !removed.empty() ||
           endpoints_changed;
  }
};

/// Compares `before` (nullptr for the first read) with `after`.
topology_change diff_accounts(const database_account* before,
                              const database_account& after);

/// Why an account read must not replace the one held; empty: it may. A read
/// that lists no writable region, after one that listed regions, is refused:
/// every real account lists its write region, and taking it would send
/// every request to the region-agnostic account endpoint. The last topology
/// stays. The first read (nothing held) is taken as it is: the account
/// endpoint is then the only address known (as the reference does).
std::string refused_topology(const database_account* held,
                             const database_account& read);

} // namespace georoute

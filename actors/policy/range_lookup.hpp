#pragma once

// Which partition-key range of its routing map a data operation goes to.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/routing_map.hpp"

#include <string_view>

namespace georoute {

/// What a data operation's range lookup in its routing map found.
enum class range_verdict {
  found,            ///< `range` is where the operation goes
  refresh_map,      ///< the targeted range is missing or gone: refresh once
  gone,             ///< still missing or gone after a refresh: it split or
                    ///< merged, the caller reads its successors
  no_range_for_epk, ///< no range holds the EPK: the map breaks the protocol
};

struct range_lookup {
  range_verdict verdict = range_verdict::found;
  const partition_key_range* range = nullptr; ///< in the map, when found
};

/// A query on one physical range (`range_id` non-empty) goes to that range
/// while it exists and is not gone; a missing one refreshes the map once
/// (`map_refreshed`: this operation already did), then is gone. Any other
/// operation goes to the range that holds `epk`.
range_lookup locate_range(const routing_map& map, std::string_view range_id,
                          std::string_view epk, bool map_refreshed);

} // namespace georoute

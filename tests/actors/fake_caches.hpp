#pragma once

// Caches for the actor tests that answer at once: one collection under any
// name, and one partition-key range that splits.

#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/messages/interfaces.hpp"

#include <memory>
#include <string>
#include <vector>

namespace georoute::test {

/// A collection with the partition key /pk.
inline collection_info one_collection() {
  collection_info c;
  c.id = "c";
  c.rid = "bbbbBBBBBBB=";
  c.self = "dbs/bbbbBB==/colls/bbbbBBBBBBB=/";
  c.partition_key.paths = {"/pk"};
  return c;
}

/// A collection cache that knows `c` under any name or rid.
inline collection_cache_actor::behavior_type
one_collection_cache(collection_cache_actor::pointer, collection_info c) {
  return {
      [c](by_name_atom, const std::string&, bool, const std::string&) {
        return c;
      },
      [c](by_rid_atom, const std::string&) { return c; },
      [](stats_atom) { return collection_cache_stats{}; },
  };
}

/// One range, "0", over every EPK in its first map; from the second read on
/// it has split into "1" and "2". `reads` counts the reads.
inline pkrange_cache_actor::behavior_type
splitting_range_cache(pkrange_cache_actor::pointer,
                      std::shared_ptr<int> reads) {
  return {
      [reads](pkranges_atom, const std::string& rid, const std::string&) {
        std::vector<partition_key_range> ranges;
        if ((*reads)++ == 0) {
          partition_key_range whole;
          whole.id = "0";
          whole.max_exclusive = "FF";
          ranges.push_back(whole);
        } else {
          partition_key_range low;
          low.id = "1";
          low.max_exclusive = "80";
          low.parents = {"0"};
          auto high = low;
          high.id = "2";
          high.min_inclusive = "80";
          high.max_exclusive = "FF";
          ranges = {low, high};
        }
        auto map = routing_map::create_complete(
            std::move(ranges), "map-" + std::to_string(*reads));
        routing_snapshot s;
        s.collection_rid = rid;
        s.map = std::make_shared<const routing_map>(std::move(map.value()));
        return s;
      },
      [](overlap_atom, const std::string&, const epk_range&, bool) {
        return std::vector<partition_key_range>{};
      },
      [](stats_atom) { return pkrange_cache_stats{}; },
  };
}

} // namespace georoute::test

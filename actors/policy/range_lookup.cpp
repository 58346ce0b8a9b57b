#include "georoute/actors/policy/range_lookup.hpp"

namespace georoute {

range_lookup locate_range(const routing_map& map, std::string_view range_id,
                          std::string_view epk, bool map_refreshed) {
  range_lookup out;
  if (!range_id.empty()) {
    const auto* r = map.range_by_id(range_id);
    if (r == nullptr || map.is_gone(range_id)) {
      out.verdict =
          map_refreshed ? range_verdict::gone : range_verdict::refresh_map;
      return out;
    }
    out.range = r;
    return out;
  }
  out.range = map.range_by_epk(epk);
  if (out.range == nullptr) out.verdict = range_verdict::no_range_for_epk;
  return out;
}

} // namespace georoute

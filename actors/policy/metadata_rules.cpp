#include "georoute/actors/policy/metadata_rules.hpp"

namespace georoute {

bool clearing_session_clears(bool policy_retries, bool name_based, int status,
                             int substatus) {
  return !policy_retries && name_based && status == 404 && substatus == 1002;
}

failure_signal signal_for(const attempt_failure& f,
                          const ladder_decision& ladder) {
  // Checked first: a timeout is a transport failure with its own meaning.
  if (f.timed_out)
    return ladder.region_silent ? failure_signal::connection()
                                : failure_signal::timed_out();
  if (f.transport_failure)
    return f.request_sent ? failure_signal::lost_after_send()
                          : failure_signal::connection(f.refused);
  return failure_signal::http(f.status, f.substatus, f.retry_after_ms);
}

collection_lookup decide_collection_lookup(bool fetch_in_flight, bool cached,
                                           bool force,
                                           std::string_view cached_rid,
                                           std::string_view obsolete_rid) {
  if (fetch_in_flight) return collection_lookup::join;
  if (!cached) return collection_lookup::miss;
  if (!force) return collection_lookup::hit;
  if (!obsolete_rid.empty() && obsolete_rid != cached_rid)
    return collection_lookup::refetch_skipped;
  return collection_lookup::refresh;
}

bool rid_mismatch(std::string_view asked_rid, std::string_view answered_rid) {
  return asked_rid != answered_rid;
}

pkrange_lookup decide_pkrange_lookup(bool has_map, std::string_view map_etag,
                                     std::string_view known_etag) {
  if (!has_map) return pkrange_lookup::load;
  if (known_etag.empty()) return pkrange_lookup::hit;
  if (known_etag != map_etag) return pkrange_lookup::refresh_skipped;
  return pkrange_lookup::load;
}

pkrange_lookup decide_overlap_lookup(bool has_map, bool force) {
  return has_map && !force ? pkrange_lookup::hit : pkrange_lookup::load;
}

} // namespace georoute

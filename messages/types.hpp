#pragma once

// The single CAF type-ID block of georoute: every message payload and every
// atom. Register it once per actor system with `register_types(cfg)`.
//
// The block starts at `caf::first_custom_type_id`, where a host program's
// own block would normally start too. Two blocks must not overlap: CAF maps
// each ID to one type (`caf::type_by_id`), so overlapping blocks in one
// translation unit do not compile, and in two they are an ODR violation
// (which type `add_message_types` registers for an ID depends on where it is
// called). A host that embeds georoute starts its block where this one
// ends:
//
//   #include "georoute/messages/types.hpp"
//   CAF_BEGIN_TYPE_ID_BLOCK(host, caf::id_block::georoute::end)
//     CAF_ADD_TYPE_ID(host, (host::order))
//   CAF_END_TYPE_ID_BLOCK(host)
//
//   georoute::register_types(cfg);
//   cfg.add_message_types<caf::id_block::host>();
//
// `caf::id_block::georoute::end` (= georoute_last_type_id + 1) moves when
// georoute adds a type, and the host's IDs move with it on its next build.
// (Atoms take no type ID in CAF 0.17.)

#include "georoute/messages/metrics.hpp"
#include "georoute/messages/payloads.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/type_id.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(georoute, caf::first_custom_type_id)
// Transport
CAF_ADD_TYPE_ID(georoute, (georoute::transport::request))
CAF_ADD_TYPE_ID(georoute, (georoute::transport::outcome))
// Resources
CAF_ADD_TYPE_ID(georoute, (georoute::account_region))
CAF_ADD_TYPE_ID(georoute, (georoute::database_account))
CAF_ADD_TYPE_ID(georoute, (georoute::partition_key_definition))
CAF_ADD_TYPE_ID(georoute, (georoute::collection_info))
CAF_ADD_TYPE_ID(georoute, (georoute::partition_key_range))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::partition_key_range>))
CAF_ADD_TYPE_ID(georoute, (georoute::pkranges_page))
CAF_ADD_TYPE_ID(georoute, (georoute::epk_range))
CAF_ADD_TYPE_ID(georoute, (georoute::query_info))
CAF_ADD_TYPE_ID(georoute, (georoute::query_plan))
CAF_ADD_TYPE_ID(georoute, (georoute::error_body))
// Requests between actors
CAF_ADD_TYPE_ID(georoute, (georoute::resolve_input))
CAF_ADD_TYPE_ID(georoute, (georoute::resolution))
CAF_ADD_TYPE_ID(georoute, (georoute::region_mark))
CAF_ADD_TYPE_ID(georoute, (georoute::fleet_demotion))
CAF_ADD_TYPE_ID(georoute, (georoute::metadata_request))
CAF_ADD_TYPE_ID(georoute, (georoute::document_request))
CAF_ADD_TYPE_ID(georoute, (georoute::query_plan_request))
CAF_ADD_TYPE_ID(georoute, (georoute::request_options))
CAF_ADD_TYPE_ID(georoute, (georoute::data_request))
CAF_ADD_TYPE_ID(georoute, (georoute::attempt_record))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::attempt_record>))
CAF_ADD_TYPE_ID(georoute, (georoute::diagnostics))
CAF_ADD_TYPE_ID(georoute, (georoute::data_response))
CAF_ADD_TYPE_ID(georoute, (georoute::change_feed_request))
CAF_ADD_TYPE_ID(georoute, (georoute::change_feed_page))
CAF_ADD_TYPE_ID(georoute, (georoute::batch_operation))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::batch_operation>))
CAF_ADD_TYPE_ID(georoute, (georoute::batch_request))
CAF_ADD_TYPE_ID(georoute, (georoute::batch_op_result))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::batch_op_result>))
CAF_ADD_TYPE_ID(georoute, (georoute::batch_response))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_options))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_open))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_chunk))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_op_result))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::bulk_op_result>))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_chunk_result))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_range_stats))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::bulk_range_stats>))
CAF_ADD_TYPE_ID(georoute, (georoute::bulk_summary))
CAF_ADD_TYPE_ID(georoute, (georoute::retry_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::router_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::endpoint_manager_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::collection_cache_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::pkrange_cache_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::query_plan_stats))
// Metrics (messages/metrics.hpp)
CAF_ADD_TYPE_ID(georoute, (georoute::engine_stats))
CAF_ADD_TYPE_ID(georoute, (georoute::operation_series))
CAF_ADD_TYPE_ID(georoute, (std::vector<georoute::operation_series>))
CAF_ADD_TYPE_ID(georoute, (georoute::router_metrics))
CAF_ADD_TYPE_ID(georoute, (georoute::engine_metrics))
// Atoms
CAF_ADD_ATOM(georoute, georoute, resolve_atom, "resolve")
CAF_ADD_ATOM(georoute, georoute, mark_atom, "mark")
CAF_ADD_ATOM(georoute, georoute, account_atom, "account")
CAF_ADD_ATOM(georoute, georoute, refresh_atom, "refresh")
CAF_ADD_ATOM(georoute, georoute, subscribe_atom, "subscribe")
CAF_ADD_ATOM(georoute, georoute, snapshot_atom, "snapshot")
CAF_ADD_ATOM(georoute, georoute, by_name_atom, "byname")
CAF_ADD_ATOM(georoute, georoute, by_rid_atom, "byrid")
CAF_ADD_ATOM(georoute, georoute, pkranges_atom, "pkranges")
CAF_ADD_ATOM(georoute, georoute, overlap_atom, "overlap")
CAF_ADD_ATOM(georoute, georoute, plan_atom, "plan")
CAF_ADD_ATOM(georoute, georoute, execute_atom, "execute")
CAF_ADD_ATOM(georoute, georoute, detach_atom, "detach")
CAF_ADD_ATOM(georoute, georoute, route_atom, "route")
CAF_ADD_ATOM(georoute, georoute, stats_atom, "stats")
CAF_ADD_ATOM(georoute, georoute, clear_session_atom, "clearsess")
CAF_ADD_ATOM(georoute, georoute, stop_atom, "stop")
CAF_ADD_ATOM(georoute, georoute, metrics_atom, "metrics")
CAF_ADD_ATOM(georoute, georoute, feed_ranges_atom, "feedranges")
CAF_ADD_ATOM(georoute, georoute, wake_atom, "wake")
CAF_ADD_ATOM(georoute, georoute, fresh_atom, "fresh")
CAF_ADD_ATOM(georoute, georoute, fleet_atom, "fleet")
CAF_ADD_ATOM(georoute, georoute, fleet_sync_atom, "flsync")
CAF_END_TYPE_ID_BLOCK(georoute)

// Snapshots are shared immutable tables: process-local by design.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::location_snapshot)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::routing_snapshot)

namespace caf {
class actor_system_config;
} // namespace caf

namespace georoute {

/// Registers the type-ID block and the error category with `cfg`. Call once
/// before the actor system is constructed.
void register_types(caf::actor_system_config& cfg);

} // namespace georoute

#pragma once

// Response bodies of the gateway (account, collection, pkranges, error) shared
// by the codec tests, and a helper to derive malformed variants from them.

#include <gtest/gtest.h>
#include <string>

namespace georoute::test {

// As the gateway sends it, verbatim but for the ports.
constexpr const char* a3_account = R"json(
{"_self":"","id":"test runacct","_rid":"test runacct.documents.azure.com","media":"//media/","addresses":"//addresses/","_dbs":"//dbs/",
 "writableLocations":[{"name":"Region A","databaseAccountEndpoint":"http://127.0.0.1:4301/"}],
 "readableLocations":[{"name":"Region A","databaseAccountEndpoint":"http://127.0.0.1:4301/"},
                      {"name":"Region B","databaseAccountEndpoint":"http://127.0.0.1:4302/"}],
 "enableMultipleWriteLocations":false,
 "userReplicationPolicy":{"asyncReplication":false,"minReplicaSetSize":3,"maxReplicasetSize":4},
 "userConsistencyPolicy":{"defaultConsistencyLevel":"Session"},
 "systemReplicationPolicy":{"minReplicaSetSize":3,"maxReplicasetSize":4},
 "readPolicy":{"primaryReadCoefficient":1,"secondaryReadCoefficient":1},
 "queryEngineConfiguration":"{\"maxSqlQueryInputLength\":262144,...}"}
)json";

// As the gateway sends it with the elided parts filled in.
constexpr const char* a4_collection = R"json(
{"id":"c","_rid":"wRUaAK6VyWc=","_self":"dbs/wRUaAA==/colls/wRUaAK6VyWc=/","_etag":"\"00000a00-0000-0000-0000-000000000000\"","_ts":1700000000,
 "_docs":"docs/","_sprocs":"sprocs/","_triggers":"triggers/","_udfs":"udfs/","_conflicts":"conflicts/",
 "partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
 "indexingPolicy":{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[]},"geospatialConfig":{"type":"Geography"}}
)json";

// As the gateway sends it with the elided values filled in.
constexpr const char* a5_pkranges = R"json(
{"_rid":"wRUaAK6VyWc=","_count":2,"PartitionKeyRanges":[
 {"_rid":"wRUaAK6VyWcCAAAAAAAAUA==","id":"0","_etag":"\"00004a00-0000-0000-0000-000000000000\"","minInclusive":"","maxExclusive":"7F","ridPrefix":0,"_self":"dbs/wRUaAA==/colls/wRUaAK6VyWc=/pkranges/wRUaAK6VyWcCAAAAAAAAUA==/",
  "throughputFraction":0.5,"status":"online","parents":[],"ownedArchivalPKRangeIds":[],"_ts":1700000000,"_lsn":17},
 {"id":"1","minInclusive":"7F","maxExclusive":"FF","parents":[]}]}
)json";

// As the gateway sends it, verbatim.
constexpr const char* a8_plan = R"json(
{"partitionedQueryExecutionInfoVersion":2,
 "queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,
   "orderBy":["Ascending"],"orderByExpressions":["c.n"],"groupByExpressions":[],"groupByAliases":[],
   "aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY c.n",
   "hasSelectValue":false,"dCountInfo":null,"hasNonStreamingOrderBy":false},
 "queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}
)json";

// Replaces the first occurrence of `from` in `text` (the test fails loudly if
// the fixture no longer contains it).
inline std::string with(std::string text, const std::string& from,
                        const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture lacks " << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

} // namespace georoute::test

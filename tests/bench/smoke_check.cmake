# bench.smoke: runs a short `georoute bench` and checks its --json output.
#   cmake -DGEOROUTE=<georoute binary> -DOUT=<json file> -P smoke_check.cmake
file(REMOVE "${OUT}")
execute_process(
  COMMAND "${GEOROUTE}" bench --seconds=0.4 --warmup=0.2 --rounds=1
          --in-flight=1,4 --fault-seconds=0.5 --cold=1,20
          --memory-collections=1000 --memory-ranges=10 --sustain=1.2
          --feed-docs=600 --feed-page=50 --bulk-docs=400 --bulk-budget=200
          --skip=peer
          --json=${OUT}
  RESULT_VARIABLE rc
  TIMEOUT 150)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "georoute bench exited with '${rc}'")
endif()
file(READ "${OUT}" doc)

function(expect_positive what)
  string(JSON v ERROR_VARIABLE err GET "${doc}" ${ARGN})
  if(err OR NOT v GREATER 0)
    message(FATAL_ERROR "${what}: expected a positive number, got '${v}' ${err}")
  endif()
endfunction()

# The bulk rows: georoute's three loads created every document (the
# peer's rows are skipped).
string(JSON nb LENGTH "${doc}" bulk)
if(NOT nb EQUAL 5)
  message(FATAL_ERROR "bulk: expected 5 rows, got ${nb}")
endif()
foreach(i 0 1 3)
  string(JSON client GET "${doc}" bulk ${i} client)
  string(JSON ok GET "${doc}" bulk ${i} ok)
  string(JSON error GET "${doc}" bulk ${i} error)
  if(NOT client STREQUAL "georoute" OR NOT ok EQUAL 400 OR
     NOT error STREQUAL "")
    message(FATAL_ERROR "bulk ${i}: ${client} created ${ok} of 400 (${error})")
  endif()
  expect_positive("bulk ${i} ops/s" bulk ${i} ops_per_second)
endforeach()
expect_positive("bulk under 429: share of the allowed rate" bulk 3 share_of_allowed)

# The change-feed drain: georoute read back every document it wrote, twice.
string(JSON nf LENGTH "${doc}" change_feed)
if(NOT nf EQUAL 4)
  message(FATAL_ERROR "change_feed: expected 4 rows, got ${nf}")
endif()
foreach(i 0 2)
  string(JSON client GET "${doc}" change_feed ${i} client)
  string(JSON docs GET "${doc}" change_feed ${i} documents)
  string(JSON written GET "${doc}" change_feed ${i} documents_written)
  string(JSON error GET "${doc}" change_feed ${i} error)
  if(NOT client STREQUAL "georoute" OR NOT docs EQUAL 600 OR
     NOT written EQUAL 600 OR NOT error STREQUAL "")
    message(FATAL_ERROR "change_feed ${i}: ${client} drained ${docs} of "
                        "${written} documents (${error})")
  endif()
  expect_positive("change_feed ${i} documents/s" change_feed ${i} documents_per_second)
endforeach()

string(JSON n LENGTH "${doc}" summary)
# 2 levels x raw, georoute (engine loop), georoute on CAF's default
# scheduler, caf-echo, georoute with hedging the other way, peer, georoute
# with fleet health on and its NATS server down
if(NOT n EQUAL 14)
  message(FATAL_ERROR "summary: expected 14 rows, got ${n}")
endif()
set(fleet_measured OFF)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON client GET "${doc}" summary ${i} client)
  if(client STREQUAL "peer")
    string(JSON skipped GET "${doc}" summary ${i} skipped)
    if(skipped STREQUAL "")
      message(FATAL_ERROR "summary ${i}: the peer was not skipped")
    endif()
    continue()
  endif()
  if(client STREQUAL "georoute-fleet-down")
    # Measured wherever libnats was built in; else skipped, saying so.
    string(JSON skipped GET "${doc}" summary ${i} skipped)
    if(NOT skipped STREQUAL "")
      if(NOT skipped MATCHES "libnats")
        message(FATAL_ERROR "summary ${i}: ${client} skipped: ${skipped}")
      endif()
      continue()
    endif()
    set(fleet_measured ON)
  endif()
  expect_positive("summary ${i} (${client}) req/s" summary ${i} requests_per_second)
  expect_positive("summary ${i} (${client}) p50" summary ${i} p50_ms)
  expect_positive("summary ${i} (${client}) CPU" summary ${i} cpu_seconds_per_1k)
endforeach()
expect_positive("georoute/raw at 4" ratios 1 georoute_over_raw)
expect_positive("hedging on / off at 4" ratios 1 hedging_on_over_off)
if(fleet_measured)
  expect_positive("fleet down / off at 4" ratios 1 fleet_down_over_off)
endif()
expect_positive("default scheduler/raw at 4" ratios 1 default_scheduler_over_raw)
expect_positive("default scheduler CPU / (raw + echo) at 4"
                ratios 1 default_scheduler_cpu_over_raw_plus_echo)

# Per-read accounting at 4 in flight: raw, georoute, the default scheduler,
# caf-echo.
string(JSON n LENGTH "${doc}" accounting)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "accounting: expected 4 rows, got ${n}")
endif()
foreach(i 0 1 2 3)
  expect_positive("accounting ${i} reads" accounting ${i} reads)
  expect_positive("accounting ${i} thread runs" accounting ${i} thread_runs)
  string(JSON allocs GET "${doc}" accounting ${i} allocations)
  if(NOT allocs EQUAL -1 AND NOT allocs GREATER 0) # -1: a sanitizer build
    message(FATAL_ERROR "accounting ${i}: allocations '${allocs}'")
  endif()
endforeach()

string(JSON n LENGTH "${doc}" failover)
if(NOT n EQUAL 6)
  message(FATAL_ERROR "failover: expected 6 rows, got ${n}")
endif()
foreach(i 0 2 4)
  string(JSON client GET "${doc}" failover ${i} client)
  if(NOT client STREQUAL "georoute")
    message(FATAL_ERROR "failover ${i}: expected georoute, got ${client}")
  endif()
  expect_positive("failover ${i} ok" failover ${i} ok)
endforeach()

string(JSON n LENGTH "${doc}" cold_start)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON client GET "${doc}" cold_start ${i} client)
  if(client STREQUAL "georoute")
    string(JSON c GET "${doc}" cold_start ${i} collection_reads)
    string(JSON p GET "${doc}" cold_start ${i} pkranges_reads)
    string(JSON ok GET "${doc}" cold_start ${i} ok)
    if(c LESS 1 OR p LESS 1 OR ok LESS 1)
      message(FATAL_ERROR "cold start ${i}: ${c} collection, ${p} pkranges reads, ${ok} ok")
    endif()
  endif()
endforeach()
expect_positive("memory bytes per range" memory bytes_per_range)

# Sustained load: one row per scheduling mode, thirteen RSS samples each.
string(JSON n LENGTH "${doc}" sustain)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "sustain: expected 2 rows, got ${n}")
endif()
foreach(i 0 1)
  expect_positive("sustain ${i} ok" sustain ${i} ok)
  expect_positive("sustain ${i} settled RSS" sustain ${i} rss_settled)
  expect_positive("sustain ${i} final RSS" sustain ${i} rss_end)
  string(JSON k LENGTH "${doc}" sustain ${i} samples)
  if(NOT k EQUAL 13)
    message(FATAL_ERROR "sustain ${i}: expected 13 samples, got ${k}")
  endif()
endforeach()
message(STATUS "bench.smoke: ${OUT} checked")

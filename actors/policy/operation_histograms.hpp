#pragma once

// Latency and request-charge histograms of the data plane, per (operation,
// region, status code, error): what the router records once per finished
// operation and what `engine::metrics()` reports as the OpenTelemetry
// database-client histograms `db.client.operation.duration` (seconds) and
// `azure.cosmosdb.client.operation.request_charge` (request units).
//
// Cheap on the hot path: the bucket boundaries are fixed, each series is
// two fixed arrays, and a record finds its series by a linear scan that
// compares two small integers before it compares the region. Only the first
// record of a new (operation, region, status, error) allocates. The number
// of series is bounded (`max_series`); past it, records go to a series whose
// region is `overflow_region`.

#include "georoute/actors/policy/operation.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// Upper bounds of the duration buckets, in seconds: OpenTelemetry's
/// recommended boundaries for `db.client.operation.duration`. A last
/// bucket (+Inf) takes the rest.
inline constexpr std::array<double, 9> operation_duration_bounds{
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};

/// Upper bounds of the request-charge buckets, in request units
/// (`azure.cosmosdb.client.operation.request_charge`). A last bucket (+Inf)
/// takes the rest.
inline constexpr std::array<double, 9> request_charge_bounds{
    1, 5, 10, 25, 50, 100, 250, 500, 1000};

/// One series: the operations of one (operation, region, status, error).
/// Bucket counts are per bucket (not cumulative); the last is +Inf.
struct operation_histogram {
  data_op operation = data_op::read;
  std::string region; ///< the region whose answer ended it; "" for none
  int status = 0;     ///< the final HTTP status; 0 when none came
  uint8_t error = 0;  ///< the caller's error code; 0 for a success
  uint64_t count = 0;
  double duration_sum = 0; ///< seconds
  std::array<uint64_t, operation_duration_bounds.size() + 1> duration{};
  double charge_sum = 0; ///< request units
  std::array<uint64_t, request_charge_bounds.size() + 1> charge{};
};

/// The index of the bucket `value` falls in: the first bound >= value
/// (Prometheus' `le`), or `bounds.size()` for +Inf.
template <size_t N>
size_t bucket_of(const std::array<double, N>& bounds, double value) {
  size_t i = 0;
  while (i < N && value > bounds[i])
    ++i;
  return i;
}

/// The series of one router. Not thread-safe: one actor owns it.
class operation_histograms {
public:
  /// Series kept at most; further keys are recorded under `overflow_region`.
  static constexpr size_t max_series = 1024;
  static constexpr std::string_view overflow_region = "(other)";

  /// Records one finished operation. `seconds` below 0 counts as 0.
  void record(data_op operation, std::string_view region, int status,
              uint8_t error, double seconds, double charge);

  const std::vector<operation_histogram>& series() const { return series_; }

private:
  operation_histogram& find(data_op operation, std::string_view region,
                            int status, uint8_t error);

  std::vector<operation_histogram> series_;
};

} // namespace georoute

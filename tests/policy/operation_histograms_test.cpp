// The data plane's histograms: bucket edges (a value on a bound belongs to
// that bound's bucket, as Prometheus' `le` says), one series per key, the
// series bound.

#include "georoute/actors/policy/operation_histograms.hpp"

#include <gtest/gtest.h>

namespace georoute {
namespace {

TEST(OperationHistograms, BucketOf_EveryEdge_LeIsInclusive) {
  const auto& b = operation_duration_bounds;
  EXPECT_EQ(bucket_of(b, 0.0), 0u);
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(bucket_of(b, b[i]), i) << "on bound " << b[i];
    EXPECT_EQ(bucket_of(b, b[i] * 1.0001), i + 1) << "just above " << b[i];
    EXPECT_EQ(bucket_of(b, b[i] * 0.9999), i) << "just below " << b[i];
  }
  EXPECT_EQ(bucket_of(b, 1e9), b.size()); // +Inf
}

TEST(OperationHistograms, Record_SameKey_OneSeriesSumsAndBuckets) {
  operation_histograms h;
  h.record(data_op::read, "West US", 200, 0, 0.003, 1);
  h.record(data_op::read, "West US", 200, 0, 0.2, 7.5);
  ASSERT_EQ(h.series().size(), 1u);
  const auto& s = h.series()[0];
  EXPECT_EQ(s.operation, data_op::read);
  EXPECT_EQ(s.region, "West US");
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.duration_sum, 0.203);
  EXPECT_EQ(s.duration[1], 1u); // (0.001, 0.005]
  EXPECT_EQ(s.duration[5], 1u); // (0.1, 0.5]
  EXPECT_DOUBLE_EQ(s.charge_sum, 8.5);
  EXPECT_EQ(s.charge[0], 1u); // <= 1
  EXPECT_EQ(s.charge[2], 1u); // (5, 10]
}

TEST(OperationHistograms, Record_EachKeyPart_SeparateSeries) {
  operation_histograms h;
  h.record(data_op::read, "West US", 200, 0, 0.01, 1);
  h.record(data_op::create, "West US", 200, 0, 0.01, 1);  // operation
  h.record(data_op::read, "East US", 200, 0, 0.01, 1);  // region
  h.record(data_op::read, "West US", 404, 25, 0.01, 1); // status and error
  h.record(data_op::read, "West US", 404, 0, 0.01, 1);  // error alone
  EXPECT_EQ(h.series().size(), 5u);
  for (const auto& s : h.series())
    EXPECT_EQ(s.count, 1u);
}

TEST(OperationHistograms, Record_NegativeOrNaN_CountsAsZero) {
  operation_histograms h;
  h.record(data_op::read, "West US", 200, 0, -1.0, -3);
  ASSERT_EQ(h.series().size(), 1u);
  EXPECT_EQ(h.series()[0].duration[0], 1u);
  EXPECT_EQ(h.series()[0].duration_sum, 0.0);
  EXPECT_EQ(h.series()[0].charge_sum, 0.0);
}

TEST(OperationHistograms, Record_PastMaxSeries_GoesToOverflowRegion) {
  operation_histograms h;
  for (size_t i = 0; i < operation_histograms::max_series + 50; ++i)
    h.record(data_op::read, "region " + std::to_string(i), 200, 0, 0.01, 1);
  EXPECT_LE(h.series().size(), operation_histograms::max_series);
  uint64_t total = 0;
  uint64_t overflow = 0;
  for (const auto& s : h.series()) {
    total += s.count;
    if (s.region == operation_histograms::overflow_region) overflow = s.count;
  }
  EXPECT_EQ(total, operation_histograms::max_series + 50);
  EXPECT_GE(overflow, 50u);
}

} // namespace
} // namespace georoute

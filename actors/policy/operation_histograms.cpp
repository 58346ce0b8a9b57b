#include "georoute/actors/policy/operation_histograms.hpp"

namespace georoute {

operation_histogram& operation_histograms::find(data_op operation,
                                                std::string_view region,
                                                int status, uint8_t error) {
  for (auto& s : series_)
    if (s.operation == operation && s.status == status && s.error == error &&
        s.region == region)
      return s;
  if (series_.size() + 1 >= max_series && region != overflow_region)
    return find(operation, overflow_region, status, error);
  operation_histogram fresh;
  fresh.operation = operation;
  fresh.region = std::string{region};
  fresh.status = status;
  fresh.error = error;
  series_.push_back(std::move(fresh));
  return series_.back();
}

void operation_histograms::record(data_op operation, std::string_view region,
                                  int status, uint8_t error, double seconds,
                                  double charge) {
  if (!(seconds > 0)) seconds = 0;
  if (!(charge > 0)) charge = 0;
  auto& s = find(operation, region, status, error);
  ++s.count;
  s.duration_sum += seconds;
  ++s.duration[bucket_of(operation_duration_bounds, seconds)];
  s.charge_sum += charge;
  ++s.charge[bucket_of(request_charge_bounds, charge)];
}

} // namespace georoute

// Summaries of repeated measurements. The harness reports the median (robust to the odd slow run
// on a shared machine) together with the range, never the mean alone.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace wslab::bench {

struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  std::size_t count = 0;
};

// The median of an even count is the mean of the two middle values.
inline Summary summarize(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("summarize: no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  Summary s;
  s.count = n;
  s.min = values.front();
  s.max = values.back();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
  return s;
}

}  // namespace wslab::bench

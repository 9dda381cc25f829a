// Every metric a run printed, by its full name, for what is derived from them afterwards (floors,
// targets).
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace bench {

// e.g. "set_kernel_arg.ratio" or "link.tcp_rtt.median".
using Results = std::map<std::string, double>;

// The value of one metric; throws std::out_of_range naming it when the run has none.
inline double result(const Results &results, const std::string &name) {
  auto it = results.find(name);
  if (it == results.end()) throw std::out_of_range(name);
  return it->second;
}

}  // namespace bench

// The performance targets, checked against the results of one run.
#pragma once

#include <map>
#include <string>

namespace bench {

// Every printed metric by its full name, e.g. "set_kernel_arg.ratio" or "link.tcp_rtt.median".
using Results = std::map<std::string, double>;

// Prints target.<name>.value/.bound/.met lines and a readable summary; returns how many targets
// were not met or could not be evaluated.
int report_targets(const Results &results);

}  // namespace bench

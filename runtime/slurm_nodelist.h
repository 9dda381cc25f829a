// Slurm's compressed host lists, as in SLURM_JOB_NODELIST: "gpu[01-04,07],login1,rack[1-2]-n[1-3]".
// Each bracket holds numbers and ranges; a range keeps the zero padding of its first number; several
// brackets in one name give every combination, in Slurm's order.
#pragma once

#include <string>
#include <vector>

namespace fedcl {

// Appends the host names text lists to hosts; returns "" or why text is not a host list (then
// hosts is left as it was).
std::string slurm_expand_nodelist(const std::string &text, std::vector<std::string> *hosts);

}  // namespace fedcl

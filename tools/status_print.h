// How `fedcl status` shows what it learnt: lines for a person, or one JSON document for scripts.
#pragma once

#include <cstdio>
#include <vector>

#include "hosts.h"
#include "status_query.h"

namespace fedcl {

void print_status_text(std::FILE *out, const HostList &hosts, const std::vector<DaemonReport> &reports);
// The version of the JSON document's schema (docs/status.md): raised when a field changes meaning or
// goes; new fields may appear without it.
constexpr int kStatusJsonSchema = 1;

void print_status_json(std::FILE *out, const HostList &hosts, const std::vector<DaemonReport> &reports);

}  // namespace fedcl

// What fedcld --metrics serves: Prometheus's text exposition format (version 0.0.4) of the daemon's
// counters (daemon_counters.h), its sessions and its memory. The metrics and their labels are
// listed in docs/status.md.
#pragma once

#include <string>

namespace fedcld {

class Listener;

std::string metrics_exposition(Listener &listener);
// A label value as the format wants it: backslash, double quote and line feed escaped.
std::string metrics_label(const std::string &value);

}  // namespace fedcld

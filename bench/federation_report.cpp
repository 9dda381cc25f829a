#include "federation_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include "bench_stats.h"

namespace bench {

namespace {

struct Metric {
  std::string unit;
  std::vector<double> values;
};

// Metrics by name, and the names in the order they first appeared.
struct Table {
  std::map<std::string, Metric> metrics;
  std::vector<std::string> order;
  std::map<std::string, double> value;  // the medians, and the derived values once printed

  void add(const std::string &name, double v, const std::string &unit) {
    auto [it, fresh] = metrics.try_emplace(name);
    if (fresh) {
      order.push_back(name);
      it->second.unit = unit;
    }
    it->second.values.push_back(v);
  }

  bool has(const std::string &name) const { return value.count(name) != 0; }
  double get(const std::string &name) const {
    auto it = value.find(name);
    if (it == value.end()) throw std::out_of_range(name);
    return it->second;
  }
};

bool read_file(const std::string &path, Table &table) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, unit, extra;
    double v;
    if (fields >> name >> v >> unit && !(fields >> extra)) table.add(name, v, unit);
  }
  return true;
}

bool ends_with(const std::string &text, const std::string &tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

void print(Table &table, const std::string &name, double v, const std::string &unit) {
  std::printf("%s %.6g %s\n", name.c_str(), v, unit.c_str());
  table.value[name] = v;
}

// After migrate.<size>.direct/.client: the ratio between the modes and the share of the raw link.
void print_derived(Table &table, const std::string &base) {
  bool bandwidth = base.rfind("migrate.", 0) == 0 && base.find('.', 8) == std::string::npos;
  if (!bandwidth || !table.has(base + ".direct")) return;
  if (table.has(base + ".client"))
    print(table, base + ".ratio", table.get(base + ".direct") / table.get(base + ".client"), "x");
  if (table.has("link.peer.tcp_throughput"))
    print(table, base + ".of_link", table.get(base + ".direct") / table.get("link.peer.tcp_throughput"), "x");
}

struct Target {
  std::string name, goal, unit;
  bool at_most;
  std::function<double(const Table &)> value, bound;
};

std::function<double(const Table &)> metric(const std::string &name, double scale = 1) {
  return [name, scale](const Table &t) { return scale * t.get(name); };
}

std::vector<Target> targets(const Table &table) {
  std::vector<Target> list;
  for (const char *size : {"64MiB", "256MiB", "1GiB"}) {
    std::string base = std::string("migrate.") + size;
    if (std::string(size) == "1GiB" && !table.has(base + ".direct")) continue;  // --quick leaves it out
    list.push_back({base + ".of_link", std::string("direct migration of ") + size + " >= 85% of raw link throughput",
                    "x", false, metric(base + ".of_link"), [](const Table &) { return 0.85; }});
    list.push_back({base + ".vs_client", std::string("direct migration of ") + size + " >= 1.8x through the client",
                    "x", false, metric(base + ".ratio"), [](const Table &) { return 1.8; }});
  }
  list.push_back({"event.extra.median", "cross-node event extra cost, median <= 1 link RTT (median)", "us", true,
                  metric("event.extra.median.direct"), metric("link.peer.tcp_rtt.median")});
  list.push_back({"event.extra.p99", "cross-node event extra cost, p99 <= 2 link RTT (median)", "us", true,
                  metric("event.extra.p99.direct"), metric("link.peer.tcp_rtt.median", 2)});
  list.push_back({"event.shared.64B.extra.median",
                  "a 64 B buffer written on one node, read on another behind the event: extra cost, median <= 2 link RTT",
                  "us", true, metric("event.shared.64B.extra.median.direct"), metric("link.peer.tcp_rtt.median", 2)});
  list.push_back({"event.shared.64B.extra.p99", "the same chain's extra cost, p99 <= 4 link RTT (median)", "us", true,
                  metric("event.shared.64B.extra.p99.direct"), metric("link.peer.tcp_rtt.median", 4)});
  list.push_back({"split.2.speedup", "split step on 2 nodes >= 1.7x one node", "x", false,
                  metric("split.2.speedup.direct"), [](const Table &) { return 1.7; }});
  list.push_back({"split.3.speedup", "split step on 3 nodes >= 2.4x one node", "x", false,
                  metric("split.3.speedup.direct"), [](const Table &) { return 2.4; }});
  return list;
}

int report_targets(const Table &table) {
  int missed = 0;
  std::vector<std::string> summary;
  for (const Target &target : targets(table)) {
    char line[320];
    try {
      double v = target.value(table), bound = target.bound(table);
      bool met = target.at_most ? v <= bound : v >= bound;
      std::printf("target.%s.value %.6g %s\n", target.name.c_str(), v, target.unit.c_str());
      std::printf("target.%s.bound %.6g %s\n", target.name.c_str(), bound, target.unit.c_str());
      std::printf("target.%s.met %d bool\n", target.name.c_str(), met ? 1 : 0);
      std::snprintf(line, sizeof line, "#   %-8s %-26s %10.4g %s %-10.4g %-5s %s", met ? "MET" : "NOT MET",
                    target.name.c_str(), v, target.at_most ? "<=" : ">=", bound, target.unit.c_str(),
                    target.goal.c_str());
      missed += !met;
    } catch (const std::out_of_range &missing) {
      std::snprintf(line, sizeof line, "#   %-8s %-26s (no result for %s) %s", "NOT RUN", target.name.c_str(),
                    missing.what(), target.goal.c_str());
      missed++;
    }
    summary.push_back(line);
  }
  std::printf("# targets (value, bound, goal):\n");
  for (const std::string &line : summary) std::printf("%s\n", line.c_str());
  return missed;
}

}  // namespace

int report_federation(const std::vector<std::string> &files) {
  Table table;
  for (const std::string &file : files)
    if (!read_file(file, table)) {
      std::fprintf(stderr, "fedcl_federation_bench: cannot read %s\n", file.c_str());
      return -1;
    }
  std::printf("# combined from %zu run output(s); each value: the median over the runs that printed it\n",
              files.size());
  // Metrics in first-seen order, a base's two modes side by side, derived values after them.
  std::vector<std::string> done;
  auto seen = [&](const std::string &name) { return std::find(done.begin(), done.end(), name) != done.end(); };
  for (const std::string &name : table.order) {
    if (table.has(name)) continue;
    std::string base = name;
    for (const char *mode : {".direct", ".client"})
      if (ends_with(name, mode)) base = name.substr(0, name.size() - std::string(mode).size());
    if (base == name) {
      print(table, name, median(table.metrics[name].values), table.metrics[name].unit);
      continue;
    }
    if (seen(base)) continue;
    done.push_back(base);
    for (const char *mode : {".direct", ".client"}) {
      auto it = table.metrics.find(base + mode);
      if (it != table.metrics.end()) print(table, it->first, median(it->second.values), it->second.unit);
    }
    print_derived(table, base);
  }
  if (table.has("event.extra.median.direct") && table.has("link.peer.tcp_rtt.median"))
    std::printf("# event.extra.median.direct = %.3g link RTTs (link.peer.tcp_rtt.median %.4g us)\n",
                table.get("event.extra.median.direct") / table.get("link.peer.tcp_rtt.median"),
                table.get("link.peer.tcp_rtt.median"));
  if (table.has("event.shared.64B.extra.median.direct") && table.has("link.peer.tcp_rtt.median"))
    std::printf("# event.shared.64B.extra.median.direct = %.3g link RTTs\n",
                table.get("event.shared.64B.extra.median.direct") / table.get("link.peer.tcp_rtt.median"));
  return report_targets(table);
}

}  // namespace bench

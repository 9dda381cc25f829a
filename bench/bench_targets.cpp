#include "bench_targets.h"

#include <cstdio>
#include <stdexcept>

namespace bench {

std::function<double(const Results &)> metric(const std::string &name) {
  return [name](const Results &r) { return result(r, name); };
}

std::function<double(const Results &)> constant(double value) {
  return [value](const Results &) { return value; };
}

int report_targets(const char *title, const std::vector<Target> &table, const Results &results) {
  int failed = 0;
  std::vector<std::string> summary;
  for (const Target &target : table) {
    char line[256];
    try {
      double value = target.value(results), bound = target.bound(results);
      bool met = target.at_most ? value <= bound : value >= bound;
      const char *name = target.name.c_str(), *unit = target.unit.c_str();
      std::printf("target.%s.value %.6g %s\n", name, value, unit);
      std::printf("target.%s.bound %.6g %s\n", name, bound, unit);
      std::printf("target.%s.met %d bool\n", name, met ? 1 : 0);
      std::snprintf(line, sizeof line, "#   %-8s %-29s %10.4g %s %-10.4g %-6s %s", met ? "MET" : "NOT MET", name, value,
                    target.at_most ? "<=" : ">=", bound, unit, target.goal.c_str());
      failed += !met;
    } catch (const std::out_of_range &missing) {
      std::snprintf(line, sizeof line, "#   %-8s %-29s (no result for %s) %s", "NOT RUN", target.name.c_str(),
                    missing.what(), target.goal.c_str());
      failed++;
    }
    summary.push_back(line);
  }
  std::printf("# %s (value, bound, goal):\n", title);
  for (const std::string &line : summary) std::printf("%s\n", line.c_str());
  return failed;
}

}  // namespace bench

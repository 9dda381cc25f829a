#include "slurm_nodelist.h"

#include <cstdlib>

namespace fedcl {

namespace {

// More names than any cluster has: a typo such as [1-1000000000] must not exhaust memory.
constexpr size_t kMaxHosts = 1 << 20;

// Splits text at the commas outside brackets.
std::vector<std::string> split_items(const std::string &text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[') depth++;
    if (c == ']') depth--;
    if (c == ',' && depth == 0) items.emplace_back();
    else items.back() += c;
  }
  return items;
}

std::string pad(unsigned long value, size_t width) {
  std::string digits = std::to_string(value);
  return digits.size() < width ? std::string(width - digits.size(), '0') + digits : digits;
}

bool all_digits(const std::string &text) {
  return !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
}

// "01-04,07" -> {"01","02","03","04","07"}.
std::string expand_bracket(const std::string &inside, std::vector<std::string> *values) {
  if (inside.empty()) return "an empty []";
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    std::string range = inside.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = range.find('-');
    std::string low = range.substr(0, dash), high = dash == std::string::npos ? low : range.substr(dash + 1);
    if (!all_digits(low) || !all_digits(high)) return "'" + range + "' in [" + inside + "] is not N or N-M";
    unsigned long from = std::strtoul(low.c_str(), nullptr, 10), to = std::strtoul(high.c_str(), nullptr, 10);
    if (to < from) return "the range '" + range + "' runs backwards";
    if (to - from >= kMaxHosts) return "the range '" + range + "' is too long";
    for (unsigned long n = from; n <= to; n++) values->push_back(pad(n, low.size()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {};
}

// One item: literal text and bracket groups, every combination of the groups' values.
std::string expand_item(const std::string &item, std::vector<std::string> *names) {
  std::vector<std::string> partial = {""};
  size_t pos = 0;
  while (pos < item.size()) {
    size_t open = item.find('[', pos);
    std::string literal = item.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    if (literal.find(']') != std::string::npos) return "a ']' without its '['";
    for (std::string &name : partial) name += literal;
    if (open == std::string::npos) break;
    size_t close = item.find(']', open);
    if (close == std::string::npos) return "a '[' without its ']'";
    std::vector<std::string> values;
    std::string why = expand_bracket(item.substr(open + 1, close - open - 1), &values);
    if (!why.empty()) return why;
    if (partial.size() * values.size() > kMaxHosts) return "more than " + std::to_string(kMaxHosts) + " hosts";
    std::vector<std::string> combined;
    for (const std::string &name : partial)
      for (const std::string &value : values) combined.push_back(name + value);
    partial.swap(combined);
    pos = close + 1;
  }
  if (partial.size() == 1 && partial[0].empty()) return "an empty host name";
  names->insert(names->end(), partial.begin(), partial.end());
  return {};
}

}  // namespace

std::string slurm_expand_nodelist(const std::string &text, std::vector<std::string> *hosts) {
  std::vector<std::string> names;
  for (const std::string &item : split_items(text)) {
    if (item.find_first_of(" \t") != std::string::npos) return "a blank inside '" + item + "'";
    std::string why = expand_item(item, &names);
    if (!why.empty()) return why;
    if (names.size() > kMaxHosts) return "more than " + std::to_string(kMaxHosts) + " hosts";
  }
  hosts->insert(hosts->end(), names.begin(), names.end());
  return {};
}

}  // namespace fedcl

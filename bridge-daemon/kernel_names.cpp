#include "kernel_names.h"

#include <cctype>

namespace fedcld {

namespace {

// The source as tokens: identifiers and single punctuation characters; comments, string and
// character literals and numbers are left out.
std::vector<std::string> tokens(const std::string &source) {
  std::vector<std::string> out;
  size_t i = 0, n = source.size();
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < n) {
    char c = source[i];
    if (source.compare(i, 2, "//") == 0) {
      while (i < n && source[i] != '\n') i++;
    } else if (source.compare(i, 2, "/*") == 0) {
      size_t end = source.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
    } else if (c == '"' || c == '\'') {
      for (i++; i < n && source[i] != c; i++)
        if (source[i] == '\\') i++;
      i++;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < n && (ident(source[i]) || source[i] == '.')) i++;
    } else if (ident(c)) {
      size_t start = i;
      while (i < n && ident(source[i])) i++;
      out.push_back(source.substr(start, i - start));
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(std::string(1, c));
      i++;
    }
  }
  return out;
}

bool is_identifier(const std::string &token) {
  return !token.empty() && (std::isalpha(static_cast<unsigned char>(token[0])) || token[0] == '_');
}

}  // namespace

size_t longest_identifier(const std::string &source) {
  size_t longest = 0;
  for (const std::string &token : tokens(source))
    if (is_identifier(token) && token.size() > longest) longest = token.size();
  return longest;
}

std::vector<KernelText> scan_kernels(const std::string &source) {
  std::vector<KernelText> kernels;
  std::vector<std::string> list = tokens(source);
  for (size_t i = 0; i < list.size(); i++) {
    if (list[i] != "kernel" && list[i] != "__kernel") continue;
    // The name is the last identifier before the parameter list; attributes are skipped whole.
    std::string name;
    size_t j = i + 1;
    for (; j < list.size() && list[j] != "(" && list[j] != ";" && list[j] != "{"; j++) {
      if (list[j] == "__attribute__") {
        int depth = 0;
        for (j++; j < list.size(); j++) {
          if (list[j] == "(") depth++;
          if (list[j] == ")" && --depth == 0) break;
        }
        continue;
      }
      if (is_identifier(list[j])) name = list[j];
    }
    if (j >= list.size() || list[j] != "(" || name.empty()) {
      i = j;
      continue;
    }
    // The parameters, split at the commas of the outer list: a pointer's target is const when
    // `const` comes before its first `*`.
    KernelText kernel{name, {}};
    bool const_seen = false, star_seen = false, any = false;
    int depth = 0;
    auto end_param = [&] {
      if (any) kernel.const_targets.push_back(star_seen && const_seen);
      const_seen = star_seen = any = false;
    };
    for (; j < list.size(); j++) {
      const std::string &token = list[j];
      if (token == "(" && depth++ == 0) continue;
      if (token == ")" && --depth == 0) break;
      if (depth == 1 && token == ",") {
        end_param();
        continue;
      }
      any = any || token != "void";
      if (token == "*") star_seen = true;
      if ((token == "const" || token == "__constant" || token == "constant") && !star_seen) const_seen = true;
    }
    end_param();
    // A definition, not a prototype: the parameter list is followed by a body.
    if (j + 1 < list.size() && list[j + 1] == "{") kernels.push_back(std::move(kernel));
    i = j;
  }
  return kernels;
}

std::vector<std::string> scan_kernel_names(const std::string &source) {
  std::vector<std::string> names;
  for (const KernelText &kernel : scan_kernels(source)) names.push_back(kernel.name);
  return names;
}

}  // namespace fedcld

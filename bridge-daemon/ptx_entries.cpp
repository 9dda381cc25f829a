#include "ptx_entries.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace fedcld {

namespace {

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// Bits of a fundamental PTX type (.u8, .s32, .f64, .b16, ...); 0 for anything else.
size_t type_bits(const std::string &token) {
  if (token.size() < 3 || token[0] != '.' || (token[1] != 'u' && token[1] != 's' && token[1] != 'f' && token[1] != 'b'))
    return 0;
  std::string digits = token.substr(2);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  size_t bits = std::strtoul(digits.c_str(), nullptr, 10);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits : 0;
}

// The element count of a parameter name declared as an array ("k_param_0[16]"); 1 otherwise, 0
// when the brackets do not hold a number.
size_t array_count(const std::string &name) {
  size_t open = name.find('[');
  if (open == std::string::npos) return 1;
  size_t close = name.find(']', open);
  std::string digits = name.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::strtoul(digits.c_str(), nullptr, 10);
}

}  // namespace

PtxParam ptx_param(const std::string &declaration) {
  std::istringstream in(declaration);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  PtxParam param;
  if (words.size() < 3 || words[0] != ".param") return param;
  const std::string &name = words.back();
  size_t bits = 0;
  bool pointer = false;
  for (size_t i = 1; i + 1 < words.size(); i++) {
    const std::string &word = words[i];
    if (word == ".texref" || word == ".surfref") {
      param.address = CL_KERNEL_ARG_ADDRESS_GLOBAL;  // images answer GLOBAL in OpenCL
      param.image = true;
      if (word == ".texref") param.access = CL_KERNEL_ARG_ACCESS_READ_ONLY;  // write and read_write: .surfref
      return param;
    }
    if (word == ".samplerref") {
      param.address = CL_KERNEL_ARG_ADDRESS_PRIVATE;
      param.sampler = true;
      return param;
    }
    if (word == ".ptr") {
      pointer = true;
    } else if (pointer && word == ".global") {
      param.address = CL_KERNEL_ARG_ADDRESS_GLOBAL;
    } else if (pointer && word == ".const") {
      param.address = CL_KERNEL_ARG_ADDRESS_CONSTANT;
    } else if (pointer && word == ".shared") {
      param.address = CL_KERNEL_ARG_ADDRESS_LOCAL;
    } else if (word == ".align") {
      i++;  // its number
    } else if (size_t b = type_bits(word)) {
      bits = b;
    }
  }
  if (pointer) return param;  // a pointer into a space named above, or not understood (0)
  size_t count = array_count(name);
  if (bits && count) {
    param.address = CL_KERNEL_ARG_ADDRESS_PRIVATE;
    param.value_size = bits / 8 * count;
  }
  return param;
}

std::vector<PtxEntry> scan_ptx_entries(const std::string &ptx) {
  std::vector<PtxEntry> entries;
  size_t i = 0, n = ptx.size();
  while (i < n) {
    if (ptx.compare(i, 2, "//") == 0) {
      i = ptx.find('\n', i);
      if (i == std::string::npos) break;
    } else if (ptx.compare(i, 2, "/*") == 0) {
      size_t end = ptx.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
    } else if (ptx.compare(i, 6, ".entry") == 0 && (i == 0 || !ident(ptx[i - 1])) && (i + 6 == n || !ident(ptx[i + 6]))) {
      i += 6;
      while (i < n && std::isspace(static_cast<unsigned char>(ptx[i]))) i++;
      size_t start = i;
      while (i < n && ident(ptx[i])) i++;
      if (i == start) continue;
      PtxEntry entry{ptx.substr(start, i - start), {}};
      while (i < n && std::isspace(static_cast<unsigned char>(ptx[i]))) i++;
      if (i < n && ptx[i] == '(') {
        size_t close = ptx.find(')', i);
        if (close == std::string::npos) close = n;
        std::string list = ptx.substr(i + 1, close - i - 1);
        std::istringstream params(list);
        for (std::string declaration; std::getline(params, declaration, ',');)
          if (declaration.find_first_not_of(" \t\r\n") != std::string::npos) entry.params.push_back(ptx_param(declaration));
        i = close;
      }
      entries.push_back(std::move(entry));
    } else {
      i++;
    }
  }
  return entries;
}

}  // namespace fedcld

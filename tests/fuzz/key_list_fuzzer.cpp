// libFuzzer target: fedcld's key list parser (bridge-daemon/keys.h key_list_parse), which reads the
// file that grants users their keys (--key-list) at start and at each change. Each input is a list's
// text. A key that starts with '/' names a file whose first line is the key: such paths must lie in
// the target's own directory of key files (kKeyDirectory, made at start: a key, an empty first line,
// a line over the 4 KiB read, a CRLF line, binary bytes), so that inputs read no other file and
// never block on one (a FIFO, a terminal); other inputs with a '/' are skipped.
//
// Checked beyond not crashing: every user kept is a word of its line (not empty; no blank, newline
// or '#'), every key kept is not empty, and every problem names the list and a line that exists.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "keys.h"

namespace {

constexpr char kKeyDirectory[] = "/tmp/fedcl-fuzz-key-files/";

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "key_list_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Whether every '/' in text starts kKeyDirectory and a file name of lower-case letters.
bool paths_stay_home(const std::string &text) {
  const size_t prefix = sizeof kKeyDirectory - 1;
  for (size_t at = text.find('/'); at != std::string::npos; at = text.find('/', at)) {
    if (text.compare(at, prefix, kKeyDirectory) != 0) return false;
    at += prefix;
    size_t name = at;
    while (at < text.size() && text[at] >= 'a' && text[at] <= 'z') at++;
    if (at == name) return false;
  }
  return true;
}

void write_key_file(const std::string &name, const std::string &contents) {
  std::string path = kKeyDirectory + name, temporary = path + ".new." + std::to_string(getpid());
  std::ofstream(temporary, std::ios::binary) << contents;
  std::rename(temporary.c_str(), path.c_str());  // whole, also for a run beside this one
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mkdir(kKeyDirectory, 0700);
  write_key_file("key", "a key from a file\nnot this line\n");
  write_key_file("empty", "\nthe first line is empty\n");
  write_key_file("long", std::string(5000, 'k'));
  write_key_file("crlf", "a key\r\n");
  write_key_file("binary", std::string("\0\x01\xff key\n", 8));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  if (!paths_stay_home(text)) return 0;
  fedcld::KeyList list = fedcld::key_list_parse(text, "fuzz");
  size_t lines = size_t(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto &[user, key] : list.keys) {
    if (user.empty() || user.find_first_of(" \t\n#") != std::string::npos) fail("a user that is not a word", user);
    if (key.empty()) fail("an empty key kept for", user);
  }
  for (const std::string &problem : list.problems) {
    if (problem.compare(0, 5, "fuzz:") != 0) fail("a problem that does not name the list", problem);
    unsigned long line = std::strtoul(problem.c_str() + 5, nullptr, 10);
    if (line == 0 || line > lines) fail("a problem on a line the list does not have", problem);
  }
  if (!list.unreadable.empty()) fail("a parsed text called unreadable", list.unreadable);
  return 0;
}

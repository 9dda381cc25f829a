// A key in memory of its own: locked against swapping where the system allows, between guard pages,
// and wiped when freed (libsodium's sodium_malloc). fedcl's long-term keys (the cluster key, the key
// list's, a client's) live in Secrets; what they were read from is wiped once they are copied out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fedcl {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string_view bytes);
  Secret(const Secret &other) : Secret(other.view()) {}
  Secret(Secret &&other) noexcept;
  Secret &operator=(const Secret &other);
  Secret &operator=(Secret &&other) noexcept;
  ~Secret();

  std::string_view view() const { return {bytes_, size_}; }
  bool empty() const { return size_ == 0; }
  bool operator==(const Secret &other) const { return view() == other.view(); }
  bool operator!=(const Secret &other) const { return !(*this == other); }

 private:
  void release();

  char *bytes_ = nullptr;
  size_t size_ = 0;
};

// Initialises libsodium once per process (every caller of its functions first); aborts when the
// system has no random source.
void ensure_sodium();

// Zeroes all of text's memory (its capacity, not only its size) and empties it: for the buffers a
// key was read or parsed from.
void secret_wipe(std::string &text);

// The first line of the file at path as a Secret (the file's bytes wiped from memory); empty with
// why set when it cannot be read or its first line is empty.
Secret secret_read_file(const std::string &path, std::string *why);

}  // namespace fedcl

// A key in memory of its own: locked against swapping where the system allows, between guard pages,
// and wiped when freed (libsodium's sodium_malloc). fedcl's long-term keys (the cluster key, the key
// list's, a client's) live in Secrets; what they were read from is wiped once they are copied out.
#pragma once

#include <sys/types.h>

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

// Keys shorter than this are refused by daemon and client alike: one recorded handshake lets anyone
// test guesses offline, as fast as HMAC runs.
constexpr size_t kMinKeyBytes = 16;

// Why key cannot be a key ("" when it can): it is shorter than kMinKeyBytes.
std::string key_too_short(std::string_view key);

// Whether a file that grants access (a key file, a key list, a hosts file with a key) is safe to
// trust, from its status: refused when anyone but its owner may write it, or its owner is neither
// root nor reader_uid (whoever can write it can put their own key in); a warning when everyone may
// read it. Group read is left to the administrator (systemd's credentials show their ACL there).
struct KeyFileCheck {
  std::string refused;  // "" when the file may be used
  std::string warning;  // "" or what a person should fix
};
KeyFileCheck key_file_check(const std::string &path, uid_t owner, mode_t mode, uid_t reader_uid);

// The first line of the file at path as a Secret (the file's bytes wiped from memory); empty with
// why set when it cannot be read, key_file_check refuses it, or its first line is empty or shorter
// than kMinKeyBytes. *warning (when given) gets key_file_check's warning.
Secret secret_read_file(const std::string &path, std::string *why, std::string *warning = nullptr);

}  // namespace fedcl

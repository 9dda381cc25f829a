// How two processes agree on the path of a large message between fedcl devices: the messages that
// the MPI commands exchange besides the data itself. Both ends are this library.
//
//   sender                                   receiver
//   Envelope (on the message's own tag)  ->
//                                        <-  Offer (control tag): direct to my daemon, or staged
//   Go (control tag): direct or staged   ->
//   [staged: Chunk, Chunk, ... (control tag), or Abort]
//   [direct: the daemons move the bytes over their peer link]
//
// A message below the threshold is just its bytes on its own tag, as a host MPI_Send sends them, so
// that a host MPI_Recv takes it. Control messages travel on the communicator's largest tag
// (MPI_TAG_UB), which fedcl reserves; an id chosen by the sender names the transfer in each.
#pragma once

#include <cstdint>
#include <cstring>

namespace fedcl_mpi {

constexpr uint64_t kEnvelopeMagic = 0x31766e4c43444546ull;  // "FEDCLnv1", little endian
constexpr uint32_t kControlMagic = 0x4c434446u;             // "FDCL"

// The first message of a large send, on the message's own tag.
struct Envelope {
  uint64_t magic;
  uint64_t id;        // the sender's, unique in the sending process
  uint64_t size;      // bytes of the message
  uint64_t instance;  // the sending daemon's instance (0: the sender has no daemon to offer)
};

enum class ControlKind : uint32_t { offer = 1, go = 2, chunk = 3, abort = 4 };

struct ControlHeader {
  uint32_t magic;
  ControlKind kind;
  uint64_t id;      // the Envelope's id
  uint64_t offset;  // chunk: where its bytes go in the message
};

// Receiver to sender: where the bytes should go.
struct Offer {
  ControlHeader header;
  int32_t status;          // 0, or the CL error that ends both commands (sizes differ)
  uint32_t direct;         // 1: to the daemon below; 0: staged through the two processes
  uint64_t instance;       // the receiving daemon and session, as its peers address them
  uint64_t session;
  uint64_t transfer;       // the receive's transfer there
  char address[192];       // host:port of its peer listener
  uint32_t address_tag_bytes;  // its daemon's tag of the address (PeerRef.addressTag), 0 or 32 bytes
  uint8_t address_tag[32];
  uint32_t pad;
};

// Sender to receiver, after an offer of the direct path: whether the sending daemon can reach the
// receiving one.
struct Go {
  ControlHeader header;
  uint32_t direct;
  uint32_t pad;
};

// Sender to receiver, instead of (more) chunks: the sending side failed.
struct Abort {
  ControlHeader header;
  int32_t status;
  uint32_t pad;
};

inline bool is_envelope(const void *bytes, int count) {
  if (count != int(sizeof(Envelope))) return false;
  uint64_t magic;
  std::memcpy(&magic, bytes, sizeof magic);
  return magic == kEnvelopeMagic;
}

}  // namespace fedcl_mpi

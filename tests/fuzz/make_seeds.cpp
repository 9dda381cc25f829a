// Writes the fuzz target's seed corpus (tests/fuzz/corpus): well-formed sessions of each kind, so
// that the fuzzer starts from what fedcld really parses. Each seed is one connection's bytes behind
// the byte that picks the daemon (0: no key, 1: a key). Run: fedcl_fuzz_seeds DIR.
// `fedcl_fuzz_seeds --upgrade FILE...` rewrites inputs made under an older protocol version: each
// opening message (Hello, Resume, StatusRequest, PeerHello) that names another version names this
// one, so that the corpus reaches past the version check again.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <iterator>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "auth.h"
#include "frame.h"
#include "seed.h"

namespace wire = fedcl::wire;
using fedcl_fuzz::Seed;

namespace {

void add_hello(Seed &seed, const std::string &user = "") {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(1);
  auto hello = request.initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setClient("seed:1");
  hello.setUser(user);
  hello.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
  seed.add(message);
}

// Context first on device 1 and an in-order queue first + 1 on it, first being the first client id.
void add_context_and_queue(Seed &seed) {
  const uint64_t first = wire::FIRST_CLIENT_ID;
  {
    capnp::MallocMessageBuilder m;
    auto c = m.initRoot<wire::Request>().initCreateContext();
    c.setId(first);
    c.initDevices(1).set(0, 1);
    seed.add(m);
  }
  capnp::MallocMessageBuilder m;
  auto q = m.initRoot<wire::Request>().initCreateQueue();
  q.setId(first + 1);
  q.setContext(first);
  q.setDevice(1);
  seed.add(m);
}

// Buffer first + 2 in that context: of contents (sent with it) or, without them, of size bytes.
void add_buffer(Seed &seed, const std::vector<uint8_t> &contents, uint64_t size = 0) {
  const uint64_t first = wire::FIRST_CLIENT_ID;
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<wire::Request>().initCreateBuffer();
  b.setId(first + 2);
  b.setContext(first);
  b.setSize(contents.empty() ? size : contents.size());
  b.setInitialContents(!contents.empty());
  seed.add(m, wire::FrameKind::REQUEST, contents);
}

// The answer to a challenge, with a proof that cannot be right (the nonces are fresh each time).
void add_wrong_proof(Seed &seed) {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::Request>();
  request.setSeq(2);
  request.initAuthenticate().setProof(fedcl::as_data(fedcl::fresh_nonce()));
  seed.add(message);
}

}  // namespace

// The frame of kind at bytes[at...], with its opening message's protocol version made this one's;
// false when it is not such a frame (then nothing changes).
bool upgrade_frame(std::vector<uint8_t> &bytes, size_t at, const fedcl::FrameHeader &header) {
  size_t words = header.message_words;
  kj::Array<capnp::word> message = kj::heapArray<capnp::word>(words);
  std::memcpy(message.begin(), bytes.data() + at + sizeof header, words * sizeof(capnp::word));
  capnp::MallocMessageBuilder rebuilt;
  try {
    capnp::FlatArrayMessageReader reader(message.asPtr());
    if (header.kind == uint16_t(wire::FrameKind::REQUEST)) {
      rebuilt.setRoot(reader.getRoot<wire::Request>());
      auto request = rebuilt.getRoot<wire::Request>();
      switch (request.which()) {
        case wire::Request::HELLO: request.getHello().setProtocolVersion(wire::PROTOCOL_VERSION); break;
        case wire::Request::RESUME: request.getResume().setProtocolVersion(wire::PROTOCOL_VERSION); break;
        case wire::Request::DAEMON_STATUS: request.getDaemonStatus().setProtocolVersion(wire::PROTOCOL_VERSION); break;
        default: return false;
      }
    } else if (header.kind == uint16_t(wire::FrameKind::PEER)) {
      rebuilt.setRoot(reader.getRoot<wire::PeerMessage>());
      auto peer = rebuilt.getRoot<wire::PeerMessage>();
      if (peer.which() != wire::PeerMessage::HELLO) return false;
      peer.getHello().setProtocolVersion(wire::PROTOCOL_VERSION);
    } else {
      return false;
    }
  } catch (const kj::Exception &) {
    return false;
  }
  std::vector<uint8_t> frame;
  fedcl::frame_append(frame, wire::FrameKind(header.kind), rebuilt, header.payload_bytes);
  bytes.erase(bytes.begin() + at, bytes.begin() + at + sizeof header + words * sizeof(capnp::word));
  bytes.insert(bytes.begin() + at, frame.begin(), frame.end());
  return true;
}

int upgrade(int count, char **paths) {
  for (int i = 0; i < count; i++) {
    std::ifstream in(paths[i], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 1;  // the byte that picks the daemon
    bool changed = false;
    // The frames up to the first that is not whole; their payloads are skipped.
    while (at + sizeof(fedcl::FrameHeader) <= bytes.size()) {
      fedcl::FrameHeader header;
      std::memcpy(&header, bytes.data() + at, sizeof header);
      if (!fedcl::frame_check(header).empty()) break;
      size_t message_end = at + sizeof header + size_t(header.message_words) * sizeof(capnp::word);
      if (message_end > bytes.size()) break;
      if (upgrade_frame(bytes, at, header)) {
        changed = true;
        std::memcpy(&header, bytes.data() + at, sizeof header);
        message_end = at + sizeof header + size_t(header.message_words) * sizeof(capnp::word);
      }
      at = message_end + header.payload_bytes + fedcl::frame_padding(header.payload_bytes);
    }
    if (changed) std::ofstream(paths[i], std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && std::string(argv[1]) == "--upgrade") return upgrade(argc - 2, argv + 2);
  if (argc != 2) {
    std::fprintf(stderr, "usage: fedcl_fuzz_seeds DIR | --upgrade FILE...\n");
    return 2;
  }
  std::string dir = argv[1];
  const uint64_t first = wire::FIRST_CLIENT_ID;

  Seed hello(false);
  add_hello(hello);
  hello.save(dir + "/open-hello");

  // A short session: context, queue, buffer with contents, a write, a read, releases.
  Seed session(false);
  add_hello(session);
  add_context_and_queue(session);
  add_buffer(session, std::vector<uint8_t>(64, 7));
  {
    capnp::MallocMessageBuilder m;
    auto w = m.initRoot<wire::Request>().initWriteBuffer();
    w.initCommand().setQueue(first + 1);
    w.setBuffer(first + 2);
    w.setOffset(8);
    w.setSize(16);
    session.add(m, wire::FrameKind::REQUEST, std::vector<uint8_t>(16, 9));
  }
  {
    capnp::MallocMessageBuilder m;
    auto request = m.initRoot<wire::Request>();
    request.setSeq(2);
    auto r = request.initReadBuffer();
    r.initCommand().setQueue(first + 1);
    r.getCommand().setEvent(first + 3);
    r.setBuffer(first + 2);
    r.setSize(64);
    session.add(m);
  }
  for (uint64_t id : {first + 3, first + 2, first + 1, first}) {
    capnp::MallocMessageBuilder m;
    m.initRoot<wire::Request>().setRelease(id);
    session.add(m);
  }
  session.save(dir + "/open-session");

  // A command that fails (its wait list names no event) and asks for a reserved event id: fedcld
  // used to end when standing in a failed event under that id (found by the bounded fuzz run).
  Seed reserved(false);
  add_hello(reserved);
  add_context_and_queue(reserved);
  {
    capnp::MallocMessageBuilder m;
    auto request = m.initRoot<wire::Request>();
    request.setSeq(2);
    auto r = request.initReadBuffer();
    r.initCommand().setQueue(first + 1);
    r.getCommand().setEvent(5);
    r.getCommand().initWaitFor(1).set(0, first + 99);
    r.setBuffer(first + 2);
    r.setSize(64);
    reserved.add(m);
  }
  reserved.save(dir + "/reserved-event-id");

  // A write the backend accepts whose event id is refused afterwards (reserved, then one in use):
  // fedcld freed the write's payload while the backend still copied from it, and kept the event
  // (a use after free and a leak, found by the long fuzz run). The id is now refused first.
  for (uint64_t event : {uint64_t(5), first}) {
    Seed write(false);
    add_hello(write);
    add_context_and_queue(write);
    add_buffer(write, {}, 4096);
    {
      capnp::MallocMessageBuilder m;
      auto w = m.initRoot<wire::Request>().initWriteBuffer();
      w.initCommand().setQueue(first + 1);
      w.getCommand().setEvent(event);
      w.setBuffer(first + 2);
      w.setSize(4096);
      write.add(m, wire::FrameKind::REQUEST, std::vector<uint8_t>(4096, 3));
    }
    {
      capnp::MallocMessageBuilder m;
      auto request = m.initRoot<wire::Request>();
      request.setSeq(2);
      request.setFinish(first + 1);
      write.add(m);
    }
    write.save(dir + (event == first ? "/write-event-id-in-use" : "/write-reserved-event-id"));
  }

  // A session that acknowledges what it received and says goodbye (its process exits).
  Seed goodbye(false);
  add_hello(goodbye);
  add_context_and_queue(goodbye);
  {
    capnp::MallocMessageBuilder m;
    m.initRoot<wire::Request>().setAck(64);
    goodbye.add(m);
  }
  {
    capnp::MallocMessageBuilder m;
    m.initRoot<wire::Request>().setGoodbye();
    goodbye.add(m);
  }
  goodbye.save(dir + "/open-ack-goodbye");

  // Resumption of a session this daemon never had, without a key and with one (then a proof).
  for (bool with_key : {false, true}) {
    Seed resume(with_key);
    {
      capnp::MallocMessageBuilder m;
      auto request = m.initRoot<wire::Request>();
      request.setSeq(1);
      auto r = request.initResume();
      r.setProtocolVersion(wire::PROTOCOL_VERSION);
      r.setToken(fedcl::as_data(fedcl::fresh_nonce()));
      r.setReceived(4096);
      r.setUser("alice");
      r.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
      resume.add(m);
    }
    if (with_key) add_wrong_proof(resume);
    resume.save(dir + (with_key ? "/keyed-resume" : "/open-resume"));
  }

  // The keyed handshake.
  Seed keyed(true);
  add_hello(keyed, "alice");
  add_wrong_proof(keyed);
  keyed.save(dir + "/keyed-handshake");

  // The keyed handshake out of order: a proof with no challenge before it, a second Hello while the
  // first is challenged, a second proof on one connection.
  Seed proof_first(true);
  add_wrong_proof(proof_first);
  proof_first.save(dir + "/keyed-proof-first");
  Seed second_hello(true);
  add_hello(second_hello, "alice");
  add_hello(second_hello, "bob");
  second_hello.save(dir + "/keyed-second-hello");
  Seed second_proof(true);
  add_hello(second_proof, "alice");
  add_wrong_proof(second_proof);
  add_wrong_proof(second_proof);
  second_proof.save(dir + "/keyed-second-proof");

  // `fedcl status`: a StatusRequest instead of Hello, answered at once by a daemon without a key,
  // challenged (then a proof that cannot be right) by one with a key.
  for (bool with_key : {false, true}) {
    Seed status(with_key);
    {
      capnp::MallocMessageBuilder m;
      auto request = m.initRoot<wire::Request>();
      request.setSeq(1);
      auto s = request.initDaemonStatus();
      s.setProtocolVersion(wire::PROTOCOL_VERSION);
      s.setUser("alice");
      s.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
      status.add(m);
    }
    if (with_key) add_wrong_proof(status);
    status.save(dir + (with_key ? "/keyed-status" : "/open-status"));
  }

  // A peer link's hello, to a daemon without a key and to one with a key (then a proof).
  for (bool with_key : {false, true}) {
    Seed peer(with_key);
    {
      capnp::MallocMessageBuilder m;
      auto h = m.initRoot<wire::PeerMessage>().initHello();
      h.setProtocolVersion(wire::PROTOCOL_VERSION);
      h.setInstance(5);
      h.setExpect(6);
      h.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
      peer.add(m, wire::FrameKind::PEER);
    }
    {
      capnp::MallocMessageBuilder m;
      m.initRoot<wire::PeerMessage>().initProof().setProof(fedcl::as_data(fedcl::fresh_nonce()));
      peer.add(m, wire::FrameKind::PEER);
    }
    peer.save(dir + (with_key ? "/keyed-peer-hello" : "/open-peer-hello"));
  }
  return 0;
}

// Writes the handshake target's seed corpus (tests/fuzz/corpus-handshake): what daemons of each kind
// answer a client's Hello, so that the fuzzer starts from what the client really parses. Each seed
// is the byte that gives the client a key (1) or none (0), then the daemon's frames.
// Run: fedcl_handshake_seeds DIR.
#include <capnp/message.h>

#include <cstdio>
#include <string>
#include <vector>

#include "auth.h"
#include "seed.h"

namespace wire = fedcl::wire;
using fedcl_fuzz::Seed;

namespace {

constexpr uint64_t kHelloSeq = 1, kAuthenticateSeq = 2;  // the client numbers its requests from 1

// A daemon's HelloReply to request seq: one platform with one device, a proof (empty: none), and a
// resume token when window_ms is not 0.
void add_hello_reply(Seed &seed, uint64_t seq, const std::vector<uint8_t> &proof = {}, uint32_t window_ms = 0) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(seq);
  auto hello = reply.initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setNode("seed-node");
  auto platform = hello.initPlatforms(1)[0];
  auto entry = platform.initInfo(1)[0];
  entry.setParam(0x0902);  // CL_PLATFORM_NAME
  entry.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t *>("PoCL"), 5));
  auto device = platform.initDevices(1)[0];
  device.setId(1);
  device.initInfo(0);
  hello.setPlatformCount(1);
  hello.setInstance(7);
  hello.setSessionToken(9);
  hello.setProof(capnp::Data::Reader(proof.data(), proof.size()));
  if (window_ms) {
    std::vector<uint8_t> token(16, 0x5a);
    hello.setResumeToken(capnp::Data::Reader(token.data(), token.size()));
    hello.setResumeWindowMs(window_ms);
  }
  seed.add(message, wire::FrameKind::REPLY);
}

void add_challenge(Seed &seed, size_t nonce_bytes = fedcl::kNonceBytes) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(kHelloSeq);
  std::vector<uint8_t> nonce(nonce_bytes, 0x33);
  reply.initChallenge().setNonce(capnp::Data::Reader(nonce.data(), nonce.size()));
  seed.add(message, wire::FrameKind::REPLY);
}

void add_refusal(Seed &seed, uint64_t seq) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(seq);
  reply.setStatus(-32);  // CL_INVALID_PLATFORM
  reply.setMessage("wrong key for user \"alice\" (or no key here for it)");
  seed.add(message, wire::FrameKind::REPLY);
}

// The notices of a session under way: a completion and an error, kernel printf output, a transfer
// chunk for the client, what the daemon received, and a heartbeat.
void add_notices(Seed &seed) {
  {
    capnp::MallocMessageBuilder message;
    auto notice = message.initRoot<wire::Notice>();
    auto completion = notice.initCompletions(1)[0];
    completion.setEvent(wire::FIRST_CLIENT_ID + 3);
    completion.setStatus(0);
    auto error = notice.initErrors(1)[0];
    error.setObject(wire::FIRST_CLIENT_ID + 1);
    error.setStatus(-5);
    error.setMessage("out of resources");
    seed.add(message, wire::FrameKind::NOTICE);
  }
  {
    capnp::MallocMessageBuilder message;
    message.initRoot<wire::Notice>().setPrintfBytes(12);
    seed.add(message, wire::FrameKind::NOTICE, std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  }
  {
    capnp::MallocMessageBuilder message;
    auto transfer = message.initRoot<wire::Notice>().initTransfer();
    transfer.setTransfer(4);
    transfer.setOffset(0);
    seed.add(message, wire::FrameKind::NOTICE, std::vector<uint8_t>(100, 0x42));
  }
  {
    capnp::MallocMessageBuilder message;
    message.initRoot<wire::Notice>().setReceived(64);
    seed.add(message, wire::FrameKind::NOTICE);
  }
  capnp::MallocMessageBuilder heartbeat;
  heartbeat.initRoot<wire::Notice>();
  seed.add(heartbeat, wire::FrameKind::NOTICE);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fedcl_handshake_seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];

  // A daemon without a key: the HelloReply, then a session's notices and a reply to nothing.
  Seed open(false);
  add_hello_reply(open, kHelloSeq);
  add_notices(open);
  add_refusal(open, 99);
  open.save(dir + "/open-hello-notices");

  // One that resumes dropped connections: the stream's end makes the client send Resume.
  Seed resumable(false);
  add_hello_reply(resumable, kHelloSeq, {}, 1000);
  resumable.save(dir + "/open-resumable");

  // One with a key: the challenge, then (after the client's proof) a HelloReply whose proof is wrong.
  Seed keyed(true);
  add_challenge(keyed);
  add_hello_reply(keyed, kAuthenticateSeq, std::vector<uint8_t>(fedcl::kProofBytes, 0x77));
  keyed.save(dir + "/keyed-challenge-wrong-proof");

  // A key refused; a challenge without a nonce; a daemon without a key to a client with one.
  Seed refused(true);
  add_challenge(refused);
  add_refusal(refused, kAuthenticateSeq);
  refused.save(dir + "/keyed-refused");
  Seed short_nonce(true);
  add_challenge(short_nonce, 5);
  short_nonce.save(dir + "/keyed-challenge-short-nonce");
  Seed unproved(true);
  add_hello_reply(unproved, kHelloSeq);
  unproved.save(dir + "/keyed-daemon-without-key");

  // Notices before the HelloReply, and a challenge to a client without a key.
  Seed early(false);
  add_notices(early);
  add_hello_reply(early, kHelloSeq);
  early.save(dir + "/open-notices-first");
  Seed keyless(false);
  add_challenge(keyless);
  add_refusal(keyless, kAuthenticateSeq);
  keyless.save(dir + "/open-challenged");
  return 0;
}

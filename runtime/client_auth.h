// A client's side of the challenge-response (protocol/auth.h), shared by the driver's sessions and
// `fedcl status`: the nonce its first request carries, the proof that answers a daemon's challenge,
// and the check of the daemon's own proof. The key never leaves the process.
#pragma once

#include <string>

#include "auth.h"
#include "fedcl.capnp.h"
#include "secret.h"
#include "tls.h"

namespace fedcl {

// What a client proves to daemons that have a key, and how its links are protected.
struct Credentials {
  std::string user;  // whose key (a daemon's --key-list); may be empty
  Secret key;        // empty: none; a daemon that has a key then refuses the client
  TlsMode tls = TlsMode::off;  // off: plain TCP; cert: the daemon's certificate; psk: the key (tls.h)
  std::string tls_ca;          // cert: the CA file that signed daemons' certificates ("": the system's)
};

class Transport;

class ClientAuth {
 public:
  // For one connection (link, to the daemon at endpoint as dialled); resume_token: the session a
  // Resume continues. The proofs are bound to all three (AuthBinding).
  ClientAuth(Credentials credentials, const Transport &link, const std::string &endpoint,
             std::string resume_token = {});

  // For the first request (Hello, Resume, StatusRequest): who the client says it is, its fresh nonce,
  // and the daemon's host as dialled.
  const std::string &user() const { return credentials_.user; }
  capnp::Data::Reader nonce() const { return as_data(nonce_); }
  const std::string &daemon() const { return binding_.daemon; }

  // Fills the answer to the daemon's challenge (Reply.challenge); "" or why not. Without a key the
  // proof stays empty, and the daemon's refusal says what is missing.
  std::string answer(wire::AuthChallenge::Reader challenge, wire::AuthProof::Builder out);

  // Whether the daemon's final reply (HelloReply.proof, DaemonStatus.proof) shows that it holds the
  // key: "" or why not. A client with a key talks only to daemons that prove they hold it.
  std::string check_daemon(capnp::Data::Reader proof) const;

 private:
  Credentials credentials_;
  AuthBinding binding_;
  Nonce nonce_;
  bool challenged_ = false;
  Proof daemon_proof_{};  // what the daemon must answer with, once challenged
};

}  // namespace fedcl

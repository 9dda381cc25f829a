#include "peer_link.h"
#include "shared_memory.h"

#include <capnp/serialize.h>

#include <algorithm>

#include "control_channel.h"
#include "exec.h"
#include "log.h"
#include "peer_signal.h"
#include "peer_transfer.h"
#include "session_host.h"
#include "trace.h"

namespace fedcld {

namespace {
constexpr uint64_t kHeartbeatMs = 1000;
}  // namespace

PeerTarget peer_target(wire::PeerRef::Reader ref) {
  auto text = [](capnp::Data::Reader bytes) { return std::string(reinterpret_cast<const char *>(bytes.begin()), bytes.size()); };
  return {ref.getInstance(), ref.getAddress(), ref.getSession(), text(ref.getAddressTag()), text(ref.getHost()),
          ref.getLocalSocket(), text(ref.getLocalSocketTag())};
}

PeerRegistry::PeerRegistry(SessionHost &host) : host_(host) {
  uv_timer_init(host_.loop(), &timer_);
  timer_.data = this;
}

void PeerRegistry::start() {
  uv_timer_start(&timer_, [](uv_timer_t *timer) { static_cast<PeerRegistry *>(timer->data)->tick(); },
                 kHeartbeatMs, kHeartbeatMs);
  // The timer alone must not keep the loop running once the session ended.
  uv_unref(reinterpret_cast<uv_handle_t *>(&timer_));
}

void PeerRegistry::close() { uv_close(reinterpret_cast<uv_handle_t *>(&timer_), nullptr); }

Session *PeerRegistry::usable_link(Peer &peer) {
  for (auto &link : peer.links)
    if (!link->closed()) return link.get();
  return nullptr;
}

void PeerRegistry::with_link(const PeerTarget &target, LinkDone done) {
  if (target.instance == host_.instance()) return done(nullptr, "the peer named is this daemon itself");
  if (target.instance == 0 || target.session == 0) return done(nullptr, "no peer session named");
  Peer &peer = peers_[target.session];
  if (peer.instance == 0) peer.instance = target.instance;
  if (peer.instance != target.instance) return done(nullptr, "the peer session named belongs to another daemon");
  if (Session *link = usable_link(peer)) return done(link, "");
  peer.waiting.push_back(std::move(done));
  if (peer.dial) return;
  if (target.address.empty()) return fail_waiting(peer, "its address is not known");
  peer.dial = next_dial_++;
  peer.dial_started = uv_now(host_.loop());
  capnp::MallocMessageBuilder message;
  auto dial = message.initRoot<wire::WorkerMessage>().initDial();
  dial.setId(peer.dial);
  auto ref = dial.initPeer();
  auto data = [](const std::string &bytes) { return capnp::Data::Reader(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()); };
  ref.setInstance(target.instance);
  ref.setAddress(target.address);
  ref.setSession(target.session);
  ref.setAddressTag(data(target.address_tag));
  ref.setHost(data(target.host));
  ref.setLocalSocket(target.local_socket);
  ref.setLocalSocketTag(data(target.local_socket_tag));
  host_.channel().send(message);
}

void PeerRegistry::fail_waiting(Peer &peer, const std::string &why) {
  std::vector<LinkDone> waiting;
  waiting.swap(peer.waiting);
  for (auto &done : waiting) done(nullptr, why);
}

void PeerRegistry::adopt(wire::TakeLink::Reader handed, SessionLink *socket) {
  auto link = host_.add_session();
  link->role = Session::Role::peer;
  link->peer_instance = handed.getPeerInstance();
  link->dialled = handed.getDial() != 0;
  std::string why = link->adopt(socket, handed.getConnection());
  if (!why.empty()) {
    link->close("cannot take the peer link over: " + why);
    return;
  }
  Peer &peer = peers_[handed.getPeerSession()];
  if (peer.instance == 0) peer.instance = handed.getPeerInstance();
  if (peer.instance != handed.getPeerInstance()) return link->close("a link for a session of another daemon");
  if (handed.getDial() == peer.dial) peer.dial = 0;
  FEDCLD_LOG(info, "peer link %llu to %s (instance %016llx, its session %016llx) is up", (unsigned long long)link->number(),
             link->peer().c_str(), (unsigned long long)peer.instance, (unsigned long long)handed.getPeerSession());
  // The dialling side passes its memory first; the answering side answers with its own once the
  // dialler's came: until then the dialler's main process may still read the link, and a descriptor
  // read there would be lost.
  if (link->local() && link->dialled) share_link_memory(*link);
  peer.links.push_back(link);
  std::vector<LinkDone> waiting;
  waiting.swap(peer.waiting);
  for (auto &done : waiting) done(link.get(), "");
  link->run_pending();
}

void PeerRegistry::dial_failed(uint64_t dial, const std::string &why) {
  for (auto &[session, peer] : peers_) {
    if (peer.dial != dial) continue;
    peer.dial = 0;
    FEDCLD_LOG(warn, "peer link to session %016llx failed: %s", (unsigned long long)session, why.c_str());
    return fail_waiting(peer, why);
  }
}

void PeerRegistry::receive(Session &link, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto message = reader.getRoot<wire::PeerMessage>();
  using W = wire::PeerMessage::Which;
  W which = message.which();
  fedcl::trace::mark(fedcl::trace::Point::daemon_peer_read, 0, unsigned(which));
  if (frame.header.payload_bytes != 0 && which != W::DATA && which != W::SIGNAL)
    return link.close("unexpected payload on a peer link");
  switch (which) {
    case W::HEARTBEAT: break;
    case W::DATA:
      if (message.getData().hasShared()) {
        std::string why = take_link_payload(link, message.getData(), frame);
        if (!why.empty()) return link.close("shared memory: " + why);
      }
      peer_deliver_data(host_, link, message.getData(), frame);
      break;
    case W::SHARED_MEMORY: {
      std::string why = adopt_link_memory(link, message.getSharedMemory());
      if (!why.empty()) return link.close("shared memory: " + why);
      if (!link.dialled) share_link_memory(link);
      break;
    }
    case W::ABORT: peer_deliver_abort(host_, link, message.getAbort()); break;
    case W::SIGNAL: peer_deliver_signal(host_, link, message.getSignal(), frame); break;
    case W::CREDIT: peer_deliver_credit(host_, link, message.getCredit()); break;
    default: link.close("peer message " + std::to_string(unsigned(which)) + " on a link whose handshake is done");
  }
}

std::shared_ptr<uint8_t[]> PeerRegistry::payload_destination(Session &link, Frame &frame, std::string *problem) {
  try {
    capnp::FlatArrayMessageReader reader(frame.message.asPtr());
    auto message = reader.getRoot<wire::PeerMessage>();
    if (message.which() == wire::PeerMessage::SIGNAL) {
      if (frame.header.payload_bytes > wire::SIGNAL_DATA_MAX_BYTES) {
        *problem = "a peer's signal carrying " + std::to_string(frame.header.payload_bytes) + " bytes, more than " +
                   std::to_string(wire::SIGNAL_DATA_MAX_BYTES);
        return nullptr;
      }
      return peer_signal_destination(host_, link, message.getSignal(), frame.header.payload_bytes);
    }
    if (message.which() != wire::PeerMessage::DATA) {
      *problem = "a payload with a peer message that takes none";
      return nullptr;
    }
    // A buffer moves in chunks, an image whole: no chunk is larger than what a session may hold.
    if (frame.header.payload_bytes > host_.payload_bound()) {
      *problem = "a peer's chunk of " + std::to_string(frame.header.payload_bytes) + " bytes, more than a session may hold (" +
                 std::to_string(host_.payload_bound()) + ")";
      return nullptr;
    }
    return peer_data_destination(host_, link, message.getData(), frame.header.payload_bytes);
  } catch (const kj::Exception &) {
    return nullptr;  // receive() finds the message malformed and closes the link
  }
}

void PeerRegistry::link_closed(Session &link, const std::string &reason) {
  for (auto &[session, peer] : peers_) {
    auto &links = peer.links;
    auto it = std::find_if(links.begin(), links.end(), [&](const auto &l) { return l.get() == &link; });
    if (it == links.end()) continue;
    links.erase(it);
    peer_lost(host_, peer.instance, "the link to peer daemon " + link.peer() + " was lost: " + reason);
    return;
  }
}

void PeerRegistry::tick() {
  uint64_t now = uv_now(host_.loop());
  uint64_t timeout = host_.options().peer_timeout_ms;
  std::vector<std::pair<std::shared_ptr<Session>, std::string>> dead;
  for (auto &[session, peer] : peers_) {
    if (peer.dial && now - peer.dial_started > timeout + 1000) {
      // The main process answers every dial; this is a backstop should its answer never come.
      peer.dial = 0;
      fail_waiting(peer, "no link within " + std::to_string(timeout / 1000) + " s");
    }
    for (auto &link : peer.links) {
      if (link->closed()) continue;
      if (now - link->last_heard > timeout) {
        dead.emplace_back(link, "silent for " + std::to_string((now - link->last_heard) / 1000) + " s");
        continue;
      }
      if (now - link->last_sent >= kHeartbeatMs) {
        capnp::MallocMessageBuilder builder;
        builder.initRoot<wire::PeerMessage>().setHeartbeat();
        link->send_peer(builder);
      }
    }
  }
  for (auto &[link, why] : dead) link->close(why);
}

}  // namespace fedcld

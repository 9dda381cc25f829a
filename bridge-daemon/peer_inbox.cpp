#include "peer_inbox.h"

#include "objects.h"

namespace fedcld {

bool PeerInbox::hold(uint64_t transfer, uint64_t sender, PeerChunk chunk) {
  if (held_bytes_ + chunk.size > kMaxHeldBytes) return false;
  held_bytes_ += chunk.size;
  held_[{transfer, sender}].chunks.push_back(std::move(chunk));
  return true;
}

void PeerInbox::hold_failure(uint64_t transfer, uint64_t sender, cl_int status, std::string message) {
  Early &early = held_[{transfer, sender}];
  early.status = status;
  early.message = std::move(message);
}

PeerInbox::Early PeerInbox::take_early(uint64_t transfer, uint64_t sender) {
  auto it = held_.find({transfer, sender});
  if (it == held_.end()) return {};
  Early early = std::move(it->second);
  held_.erase(it);
  for (const PeerChunk &chunk : early.chunks) held_bytes_ -= chunk.size;
  return early;
}

std::shared_ptr<PeerReceive> PeerInbox::receive(uint64_t transfer, uint64_t sender) const {
  auto it = receives_.find(transfer);
  return it == receives_.end() || it->second.sender != sender ? nullptr : it->second.receive;
}

std::vector<std::shared_ptr<PeerReceive>> PeerInbox::receives_from(uint64_t sender) const {
  std::vector<std::shared_ptr<PeerReceive>> found;
  for (const auto &entry : receives_)
    if (entry.second.sender == sender) found.push_back(entry.second.receive);
  return found;
}

std::shared_ptr<PeerReceive> PeerInbox::receive_with_event(uint64_t event) const {
  for (const auto &entry : receives_)
    if (entry.second.event == event) return entry.second.receive;
  return nullptr;
}

std::shared_ptr<PeerReceive> PeerInbox::redirect_receive(uint64_t transfer, uint64_t sender) {
  auto it = receives_.find(transfer);
  if (it == receives_.end()) return nullptr;
  it->second.sender = sender;
  return it->second.receive;
}

std::shared_ptr<PeerSend> PeerInbox::take_undirected_send(uint64_t transfer) {
  auto it = undirected_sends_.find(transfer);
  if (it == undirected_sends_.end()) return nullptr;
  auto send = std::move(it->second);
  undirected_sends_.erase(it);
  return send;
}

std::shared_ptr<PeerSend> PeerInbox::send_to(uint64_t receiver, uint64_t transfer) const {
  auto it = sends_.find({receiver, transfer});
  return it == sends_.end() ? nullptr : it->second.lock();
}

void PeerInbox::hold_signal(uint64_t event, Signal signal) {
  // Bytes past the bound are dropped: the stand-in then fails for want of them (stand_in_created).
  if (held_signal_bytes_ + signal.size > kMaxHeldBytes) signal.bytes.reset(), signal.size = 0;
  held_signal_bytes_ += signal.size;
  Signal &held = signals_[event];
  held_signal_bytes_ -= held.size;
  held = std::move(signal);
}

bool PeerInbox::take_signal(uint64_t event, Signal *signal) {
  auto it = signals_.find(event);
  if (it == signals_.end()) return false;
  *signal = std::move(it->second);
  held_signal_bytes_ -= signal->size;
  signals_.erase(it);
  return true;
}

void PeerInbox::add_stand_in(uint64_t event_id, uint64_t instance, cl_event event, std::shared_ptr<uint8_t[]> landing,
                             uint64_t landing_size) {
  clRetainEvent(event);
  auto [it, added] = stand_ins_.try_emplace(event_id, StandIn{instance, event, std::move(landing), landing_size});
  if (!added) clReleaseEvent(event);
}

std::shared_ptr<uint8_t[]> PeerInbox::landing(uint64_t event_id, uint64_t instance, uint64_t *size) const {
  auto it = stand_ins_.find(event_id);
  if (it == stand_ins_.end() || it->second.instance != instance) return nullptr;
  *size = it->second.landing_size;
  return it->second.landing;
}

cl_event PeerInbox::take_stand_in(uint64_t event_id, uint64_t instance) {
  auto it = stand_ins_.find(event_id);
  if (it == stand_ins_.end() || it->second.instance != instance) return nullptr;
  cl_event event = it->second.event;
  stand_ins_.erase(it);
  return event;
}

cl_event PeerInbox::take_stand_in(uint64_t event_id) {
  auto it = stand_ins_.find(event_id);
  return it == stand_ins_.end() ? nullptr : take_stand_in(event_id, it->second.instance);
}

std::vector<std::pair<uint64_t, cl_event>> PeerInbox::take_stand_ins_of(uint64_t instance) {
  std::vector<std::pair<uint64_t, cl_event>> taken;
  for (auto it = stand_ins_.begin(); it != stand_ins_.end();) {
    if (it->second.instance == instance) {
      taken.emplace_back(it->first, it->second.event);
      it = stand_ins_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

void PeerInbox::clear() {
  held_.clear();
  held_bytes_ = 0;
  receives_.clear();
  undirected_sends_.clear();
  sends_.clear();
  signals_.clear();
  held_signal_bytes_ = 0;
  for (auto &entry : stand_ins_) {
    fail_unset_user_event(entry.second.event);  // its session is gone: no signal will be waited for
    clReleaseEvent(entry.second.event);
  }
  stand_ins_.clear();
}

}  // namespace fedcld

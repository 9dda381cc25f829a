#include "sub_buffer_order.h"

#include <algorithm>

namespace fedcld {

// What a destructor callback needs to find its way back to the loop; the order may be gone by then.
struct SubBufferOrder::Destruction {
  std::weak_ptr<SubBufferOrder> order;
  Post post;
  cl_mem parent;
};

std::shared_ptr<SubBufferOrder> SubBufferOrder::make(Post post) {
  return std::shared_ptr<SubBufferOrder>(new SubBufferOrder(std::move(post)));
}

void SubBufferOrder::created(cl_mem parent, cl_mem sub) {
  auto *destruction = new Destruction{weak_from_this(), post_, parent};
  if (clSetMemObjectDestructorCallback(sub, on_destroyed, destruction) != CL_SUCCESS) {
    delete destruction;
    return;  // untracked: released when the client says, as any other object
  }
  parents_[parent].push_back({sub, State::held});
}

void SubBufferOrder::release(cl_mem parent, cl_mem sub) {
  auto list = parents_.find(parent);
  if (list != parents_.end())
    for (Entry &entry : list->second)
      if (entry.sub == sub) {
        entry.state = State::let_go;
        return advance(parent);
      }
  clReleaseMemObject(sub);  // untracked
}

void CL_CALLBACK SubBufferOrder::on_destroyed(cl_mem sub, void *data) {
  std::unique_ptr<Destruction> destruction(static_cast<Destruction *>(data));
  destruction->post([order = destruction->order, parent = destruction->parent, sub] {
    if (auto alive = order.lock()) alive->destroyed(parent, sub);
  });
}

void SubBufferOrder::destroyed(cl_mem parent, cl_mem sub) {
  auto list = parents_.find(parent);
  if (list == parents_.end()) return;
  auto &entries = list->second;
  entries.erase(std::remove_if(entries.begin(), entries.end(), [sub](const Entry &e) { return e.sub == sub; }),
                entries.end());
  advance(parent);
}

void SubBufferOrder::transfer_ended() {
  if (--transfers_ > 0) return;
  std::vector<cl_mem> parents;
  for (const auto &entry : parents_) parents.push_back(entry.first);
  for (cl_mem parent : parents) advance(parent);
}

void SubBufferOrder::advance(cl_mem parent) {
  if (transfers_ > 0) return;  // transfer_ended advances every parent
  auto list = parents_.find(parent);
  if (list == parents_.end()) return;
  auto &entries = list->second;
  if (entries.empty()) {
    parents_.erase(list);
    return;
  }
  Entry &newest = entries.back();
  if (newest.state != State::let_go) return;  // held by the client, or its destruction is awaited
  newest.state = State::releasing;
  clReleaseMemObject(newest.sub);  // its destructor callback posts the next step
}

}  // namespace fedcld

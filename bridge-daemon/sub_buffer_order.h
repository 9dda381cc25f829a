// The order in which a session's sub-buffers leave the backend. NVIDIA's driver (580) crashes in
// clReleaseMemObject when a sub-buffer is destroyed while another of the same parent, made after it
// and overlapping it, still lives, once kernels used both (docs/design-decisions.md, "Backend
// defects fedcld steps around"). So per parent, sub-buffers go newest first, and each only once the
// one made after it is destroyed: not merely released by fedcld's table, since a transfer, a command
// or the driver may hold it longer. The backend tells of a destruction through the destructor
// callback, on a thread of its own; the next release waits for it on the session's loop.
//
// No sub-buffer is released while a transfer of the session is under way: NVIDIA's release of a
// sub-buffer waits, holding the driver's lock, until its parent's commands are done, and a transfer's
// next commands need the loop, which then waits for that lock (a 6 GiB read-back of a grid whose
// slabs' sub-buffers were just released stood still until the client gave the daemon up).
#pragma once

#include <CL/cl.h>

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace fedcld {

class SubBufferOrder : public std::enable_shared_from_this<SubBufferOrder> {
 public:
  // post runs a task on the session's loop, from any thread.
  using Post = std::function<void(std::function<void()>)>;
  static std::shared_ptr<SubBufferOrder> make(Post post);

  // A sub-buffer of parent, just made: fedcld holds one reference to it.
  void created(cl_mem parent, cl_mem sub);
  // fedcld's reference to sub goes: now, or once every sub-buffer of parent made after it is destroyed.
  void release(cl_mem parent, cl_mem sub);
  // The process ends: nothing more is released.
  void forget() { parents_.clear(); }
  // A transfer starts, or ends: releases wait while any is under way.
  void transfer_started() { transfers_++; }
  void transfer_ended();

 private:
  explicit SubBufferOrder(Post post) : post_(std::move(post)) {}
  enum class State { held, let_go, releasing };
  struct Entry {
    cl_mem sub;
    State state;
  };
  struct Destruction;
  static void CL_CALLBACK on_destroyed(cl_mem sub, void *destruction);
  void destroyed(cl_mem parent, cl_mem sub);
  // Releases from the newest end of parent's list while the newest was let go.
  void advance(cl_mem parent);

  Post post_;
  size_t transfers_ = 0;
  std::unordered_map<cl_mem, std::vector<Entry>> parents_;  // each parent's sub-buffers, oldest first
};

}  // namespace fedcld

// A session's command buffer (cl_khr_command_buffer): commands recorded once with their objects
// resolved, replayed on a queue by the daemon itself at each clEnqueueCommandBufferKHR. One replay
// is a few local enqueue calls; the client sends one small request for it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device_commands.h"

namespace fedcld {

class CommandBuffer {
 public:
  // recorded_in_order: whether the queue it is recorded for is in order; its commands then run in
  // order on any queue, as recorded.
  explicit CommandBuffer(bool recorded_in_order) : recorded_in_order_(recorded_in_order) {}
  CommandBuffer(const CommandBuffer &) = delete;
  ~CommandBuffer();

  // Appends request's command (RecordCommand.command), waiting for the commands whose sync points
  // wait_for names. A launch gets a kernel of its own, with the arguments as recorded. Throws
  // RequestError; the buffer is then unchanged.
  void record(ObjectTable &objects, capnp::List<uint32_t>::Reader wait_for, wire::Request::Reader request);

  // Changes the launch recorded at sync_point (cl_khr_command_buffer_mutable_dispatch): args on its
  // kernel, and the sizes that are given. Replays already enqueued keep what they were enqueued with.
  void update(ObjectTable &objects, wire::Request::UpdateCommand::Reader request);

  // Enqueues every command on queue, the first ones behind wait. *event (if not null) completes when
  // all of them have. A buffer recorded for an in-order queue runs in recorded order; one recorded
  // for an out-of-order queue follows its sync points and barriers. Throws RequestError if the
  // backend refuses one.
  void replay(cl_command_queue queue, bool in_order, const std::vector<cl_event> &wait, cl_event *event);

  // A recording or an update the buffer refused: the client took it as done, so every replay from
  // now on fails with it (what it was told to run, it can no longer run).
  void refused(const RequestError &error, const char *what);

 private:
  struct Recorded {
    DeviceCommand command;
    std::vector<uint32_t> wait_for;  // indexes of earlier commands
    bool barrier = false;
    cl_kernel kernel = nullptr;                // a launch's own kernel
    std::shared_ptr<LaunchGeometry> geometry;  // a launch's sizes, which its enqueue reads
  };
  void hold(cl_mem mem);
  bool recorded_in_order_;
  std::vector<Recorded> commands_;
  std::vector<cl_mem> held_mems_;        // one reference each, for as long as the buffer lives
  std::vector<cl_kernel> own_kernels_;
  cl_int failed_ = CL_SUCCESS;  // refused()
  std::string failure_;
};

void exec_create_command_buffer(Call &call, wire::Request::CreateCommandBuffer::Reader request);
void exec_record_command(Call &call, wire::Request::RecordCommand::Reader request);
void exec_enqueue_command_buffer(Call &call, wire::Request::EnqueueCommandBuffer::Reader request);
void exec_update_command(Call &call, wire::Request::UpdateCommand::Reader request);

}  // namespace fedcld

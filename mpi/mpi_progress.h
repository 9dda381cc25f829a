// The one place this library calls MPI: a loop of operations, each advanced a step at a time with
// non-blocking MPI calls. With MPI_THREAD_MULTIPLE a thread of the library runs the loop; at lower
// levels only the application's thread may call MPI, so the loop runs while it is inside fedcl: the
// MPI commands themselves and fedcl's waits (clWaitForEvents, clFinish, blocking commands), through
// the port's wait hook.
//
// Operations also learn things outside the loop (a device command completed, chunks of a send came
// to this process): they note them under their own lock and act on them in their next step.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "mpi_wire.h"
#include "transfer_port.h"

namespace fedcl_mpi {

class Progress;

// Where a message goes to or comes from.
struct Route {
  int rank, tag;
  MPI_Comm comm;
  bool operator==(const Route &other) const { return rank == other.rank && tag == other.tag && comm == other.comm; }
  // Whether a message could match both (wildcards included).
  bool overlaps(const Route &other) const {
    return comm == other.comm && (rank == other.rank || rank == MPI_ANY_SOURCE || other.rank == MPI_ANY_SOURCE) &&
           (tag == other.tag || tag == MPI_ANY_TAG || other.tag == MPI_ANY_TAG);
  }
};

// A control message for an operation (mpi_wire.h), with its bytes after the header.
struct Control {
  int source;
  std::vector<uint8_t> bytes;
  template <typename T>
  const T &as() const { return *reinterpret_cast<const T *>(bytes.data()); }
};

class Operation {
 public:
  virtual ~Operation() = default;
  // Advances with non-blocking MPI calls; returns true once the operation is over (it is dropped).
  virtual bool step(Progress &progress) = 0;
  // While it waits for a message to match, the route it takes one from: a later operation whose
  // route overlaps waits until this one has its message, so that receives match in the order they
  // were started, as MPI's do.
  virtual const Route *matching() const { return nullptr; }
  // Until it has put its first message on MPI, the route a send goes to: a later send to the same
  // route waits until then, so that messages leave in the order the sends were started (MPI's
  // non-overtaking rule), whichever has its bytes first.
  virtual const Route *unsent() const { return nullptr; }
  // Whether MPI_Finalize must wait for it (a message still to go).
  virtual bool must_go_before_finalize() const { return false; }
  // A control message addressed to this operation (see Progress::expect).
  virtual void control(Progress &, Control message) { (void)message; }
};

class Progress {
 public:
  static Progress &get();

  // Once, when the ICD loads the library: which thread level the program has, and the port.
  void attach(fedcl::TransferPort *port) { port_ = port; }
  fedcl::TransferPort &port() { return *port_; }
  // The program's MPI: initialised, and at which level. Returns "" or why the commands cannot run.
  std::string check_mpi();
  bool multiple() const { return multiple_; }

  // Starts an operation: with MPI_THREAD_MULTIPLE fedcl's MPI thread takes it (unless wake_thread
  // is false: the caller polls, and wakes the thread if work is left); at lower levels its first
  // step is taken at once when this thread may call MPI.
  void add(std::shared_ptr<Operation> operation, bool wake_thread = true);
  // Something an operation waits for happened outside the loop (a chunk came, a command ended).
  void wake();
  // Runs the loop once if this thread may call MPI now (called from fedcl's waits and the MPI
  // commands; at the lower levels only the thread that initialised MPI may); returns whether
  // operations are in flight.
  bool poll_here();

  // Control messages of kind about transfer id from source on comm go to operation.
  void expect(MPI_Comm comm, int source, ControlKind kind, uint64_t id, std::weak_ptr<Operation> operation);
  void unexpect(MPI_Comm comm, int source, ControlKind kind, uint64_t id);
  // Whether a receive started before could still take a message from route (it has not matched one).
  bool matching_pending(const Route &route);
  int control_tag(MPI_Comm comm);

  uint64_t next_id() { return ++last_id_; }

  // MPI_Finalize has begun (the delete callback of an attribute of MPI_COMM_SELF): runs the loop until
  // the messages still to go have gone, then never calls MPI again.
  void drain();
  // Messages above it go the direct or staged way; below, eagerly as one MPI message.
  uint64_t direct_threshold() const { return direct_threshold_; }

 private:
  Progress();
  bool poll();  // with poll_mutex_ held
  bool receive_controls();
  void thread_main();

  fedcl::TransferPort *port_ = nullptr;
  bool multiple_ = false;
  bool checked_ = false;
  std::string mpi_problem_;
  uint64_t direct_threshold_;
  std::atomic<uint64_t> last_id_{0};
  std::atomic<bool> finalized_{false};

  std::mutex poll_mutex_;  // one loop at a time

  std::mutex mutex_;  // what follows
  std::condition_variable wake_;
  bool woken_ = false;
  std::vector<std::shared_ptr<Operation>> added_;
  std::atomic<size_t> running_{0};  // operations_' size; raised only with mutex_ held (poll), so that
                                     // thread_main's wait sees an operation as added or running
  std::vector<std::shared_ptr<Operation>> operations_;  // with poll_mutex_ held
  using Key = std::tuple<MPI_Comm, int, ControlKind, uint64_t>;
  std::map<Key, std::weak_ptr<Operation>> expected_;
  std::map<Key, std::vector<Control>> early_;
  std::map<MPI_Comm, int> comms_;  // communicators with expected control messages, and how many
  std::thread thread_;
};

// Where a command leaves its event: the application's, or released when it asked for none (done may
// be null: none was made). blocking: waits for it first and returns what it ended with.
cl_int hand_out(cl_event done, bool blocking, cl_event *event);

}  // namespace fedcl_mpi

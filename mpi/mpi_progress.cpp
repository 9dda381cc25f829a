#include "mpi_progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace fedcl_mpi {

namespace {

// FEDCL_MPI_DIRECT_MIN: bytes from which a message between fedcl devices takes the direct or staged
// path ("off": never). The default is measured (docs/transfer-engine.md).
uint64_t threshold_from_environment() {
  constexpr uint64_t kDefault = 1 << 20;
  const char *text = std::getenv("FEDCL_MPI_DIRECT_MIN");
  if (!text || !*text) return kDefault;
  if (std::string(text) == "off") return UINT64_MAX;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (*end) {
    std::fprintf(stderr, "fedcl: FEDCL_MPI_DIRECT_MIN=%s is not a number of bytes (or off); using %llu\n", text,
                 (unsigned long long)kDefault);
    return kDefault;
  }
  return value;
}

}  // namespace

Progress &Progress::get() {
  static Progress *progress = new Progress();  // never destroyed: operations may end at exit
  return *progress;
}

Progress::Progress() : direct_threshold_(threshold_from_environment()) {}

std::string Progress::check_mpi() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (checked_) return mpi_problem_;
  int initialized = 0, finalized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return "MPI is not initialised (or already finalised)";
  checked_ = true;
  // MPI_Finalize calls the delete callbacks of MPI_COMM_SELF's attributes first, while MPI still works.
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, [](MPI_Comm, int, void *, void *) {
    Progress::get().drain();
    return MPI_SUCCESS;
  }, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  MPI_Query_thread(&level);
  multiple_ = level >= MPI_THREAD_MULTIPLE;
  if (multiple_) {
    thread_ = std::thread([this] { thread_main(); });
    thread_.detach();
  }
  port_->set_wait_hook([] { return Progress::get().poll_here(); });
  return mpi_problem_;
}

void Progress::add(std::shared_ptr<Operation> operation, bool wake_thread) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    added_.push_back(std::move(operation));
  }
  if (!multiple_) poll_here();
  else if (wake_thread) wake_.notify_all();
}

bool Progress::poll_here() {
  if (finalized_) return false;
  if (!multiple_) {
    int main = 0;
    MPI_Is_thread_main(&main);
    // FUNNELED: only the thread that initialised MPI may call it. SERIALIZED would allow this one,
    // but the application may be calling MPI on the main thread right now.
    if (!main) return false;
  }
  // A poll under way (further up this thread's stack, or fedcl's MPI thread) continues.
  std::unique_lock<std::mutex> lock(poll_mutex_, std::try_to_lock);
  if (lock.owns_lock() && !finalized_) poll();  // (drain finalizes under the lock)
  return running_ > 0 && !finalized_;
}

void Progress::expect(MPI_Comm comm, int source, ControlKind kind, uint64_t id, std::weak_ptr<Operation> operation) {
  std::lock_guard<std::mutex> lock(mutex_);
  expected_[Key(comm, source, kind, id)] = std::move(operation);
  comms_[comm]++;
}

void Progress::unexpect(MPI_Comm comm, int source, ControlKind kind, uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!expected_.erase(Key(comm, source, kind, id))) return;
  if (--comms_[comm] == 0) comms_.erase(comm);
}

bool Progress::matching_pending(const Route &route) {
  std::lock_guard<std::mutex> poll_lock(poll_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto *list : {&operations_, &added_})
    for (const auto &operation : *list)
      if (const Route *waiting = operation->matching(); waiting && waiting->overlaps(route)) return true;
  return false;
}

int Progress::control_tag(MPI_Comm) {
  static const int tag = [] {
    int *upper = nullptr, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &flag);
    return flag && upper ? *upper : 32767;
  }();
  return tag;
}

// Takes every control message waiting on the communicators that expect some, and hands each to its
// operation (or keeps it until the operation expects it).
bool Progress::receive_controls() {
  std::vector<MPI_Comm> comms;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &entry : comms_) comms.push_back(entry.first);
  }
  bool any = false;
  for (MPI_Comm comm : comms) {
    for (;;) {
      int found = 0, count = 0;
      MPI_Message message;
      MPI_Status status;
      if (MPI_Improbe(MPI_ANY_SOURCE, control_tag(comm), comm, &found, &message, &status) != MPI_SUCCESS || !found)
        break;
      MPI_Get_count(&status, MPI_BYTE, &count);
      Control control{status.MPI_SOURCE, std::vector<uint8_t>(size_t(count))};
      MPI_Mrecv(control.bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      any = true;
      if (control.bytes.size() < sizeof(ControlHeader) || control.as<ControlHeader>().magic != kControlMagic) {
        std::fprintf(stderr, "fedcl: a message on the tag fedcl reserves (%d) from rank %d is not fedcl's: dropped\n",
                     control_tag(comm), status.MPI_SOURCE);
        continue;
      }
      const ControlHeader &header = control.as<ControlHeader>();
      Key key(comm, control.source, header.kind, header.id);
      std::shared_ptr<Operation> operation;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = expected_.find(key);
        if (it == expected_.end()) {
          early_[key].push_back(std::move(control));
          continue;
        }
        operation = it->second.lock();
      }
      if (operation) operation->control(*this, std::move(control));
    }
  }
  // Messages that came before their operation expected them.
  std::vector<std::pair<std::shared_ptr<Operation>, Control>> late;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = early_.begin(); it != early_.end();) {
      auto expected = expected_.find(it->first);
      if (expected == expected_.end()) {
        ++it;
        continue;
      }
      if (auto operation = expected->second.lock())
        for (Control &control : it->second) late.emplace_back(operation, std::move(control));
      it = early_.erase(it);
    }
  }
  for (auto &entry : late) entry.first->control(*this, std::move(entry.second));
  return any || !late.empty();
}

bool Progress::poll() {
  {
    // What this poll takes from added_ counts as running before the lock goes: fedcl's MPI thread,
    // woken by the add, may look next, and with neither added nor running operations it sleeps
    // until the next wake-up. Counted at the end of the poll, a receive that an application
    // thread's poll took and found unmatched was left to no one (mpi_transfer_np3: a send's
    // receiver never answered its envelope).
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &operation : added_) operations_.push_back(std::move(operation));
    added_.clear();
    running_ = operations_.size();
  }
  bool any = receive_controls();
  // In the order they were started; a receive waits while an earlier one may take its message, and
  // a send while an earlier one to the same route has not gone.
  std::vector<Route> unmatched, unsent;
  for (size_t i = 0; i < operations_.size();) {
    Operation &operation = *operations_[i];
    bool behind = false;
    if (const Route *route = operation.matching())
      for (const Route &earlier : unmatched) behind = behind || route->overlaps(earlier);
    if (const Route *route = operation.unsent())
      for (const Route &earlier : unsent) behind = behind || *route == earlier;
    if (!behind && operation.step(*this)) {
      operations_.erase(operations_.begin() + long(i));
      any = true;
      continue;
    }
    if (const Route *route = operation.matching()) unmatched.push_back(*route);
    if (const Route *route = operation.unsent()) unsent.push_back(*route);
    i++;
  }
  running_ = operations_.size();
  return any;
}

void Progress::drain() {
  for (;;) {
    bool pending = false;
    {
      std::lock_guard<std::mutex> lock(poll_mutex_);
      poll();
      for (const auto &operation : operations_) pending = pending || operation->must_go_before_finalize();
      if (!pending) {
        if (!operations_.empty())
          std::fprintf(stderr, "fedcl: MPI_Finalize with %zu MPI command(s) of fedcl still waiting for a message\n",
                       operations_.size());
        finalized_ = true;
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Progress::wake() {
  if (!multiple_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  wake_.notify_all();
}

void Progress::thread_main() {
  // Idle rounds back off between polls: from 10 us up to 100 us while messages have been flowing in
  // the last 5 ms, up to 2 ms after that. Polling MPI costs a core that the devices and daemons of a
  // small node need (a Himeno step took a quarter longer with a 100 us ceiling on 2 cores); work this
  // process hands the loop (a chunk came, an operation started) wakes it at once.
  using namespace std::chrono;
  constexpr auto kQuickest = microseconds(10), kBusyCeiling = microseconds(100), kIdleCeiling = microseconds(2000);
  constexpr auto kBusyFor = milliseconds(5);
  auto pause = kQuickest;
  auto last_work = steady_clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return !added_.empty() || running_ > 0; });
    }
    bool any;
    {
      std::lock_guard<std::mutex> lock(poll_mutex_);
      if (finalized_) return;
      any = poll();
    }
    auto now = steady_clock::now();
    if (any) {
      last_work = now;
      pause = kQuickest;
      continue;
    }
    pause = std::min(pause * 2, now - last_work < kBusyFor ? kBusyCeiling : kIdleCeiling);
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, pause, [&] { return woken_ || !added_.empty(); })) pause = kQuickest;
    woken_ = false;
  }
}

cl_int hand_out(cl_event done, bool blocking, cl_event *event) {
  cl_int err = CL_SUCCESS;
  if (blocking) {
    clWaitForEvents(1, &done);
    cl_int status = CL_COMPLETE;
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    err = status < 0 ? status : CL_SUCCESS;
  }
  if (event) *event = done;
  else if (done) clReleaseEvent(done);
  return err;
}

}  // namespace fedcl_mpi

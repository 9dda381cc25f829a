// A session worker's confinement (docs/design-decisions.md, "Workers are a boundary"). A kernel on a
// CPU device is native code in the worker, and a driver bug may make one so on a GPU: what the
// worker's process may do is what a hostile session may do. So, before the backend loads (its
// threads are made then, and each inherits its maker's confinement), the worker gives up gaining
// privileges and being inspected, and Landlock leaves it its libraries, its devices, /proc and /sys
// to read, and its own scratch folder (temporary files, JIT caches); no TCP connection or port, no
// signal or abstract socket outside itself. Once the backend is loaded, a seccomp filter on every
// thread refuses the calls that reach into other processes (ptrace, process_vm_*, signals but to
// itself, pidfd_getfd), new namespaces and mounts, and changes of identity.
#pragma once

#include <string>
#include <vector>

namespace fedcld {

// What this kernel offers; the main process says it at start, so that a node without Landlock is
// known to be one.
struct SandboxSupport {
  int landlock_abi = 0;  // 0: none (not built in, or disabled at boot)
  bool seccomp = false;  // this build has a filter for this machine's architecture
};
SandboxSupport sandbox_support();
// One line: what confines the workers here, and what is missing.
std::string sandbox_describe(const SandboxSupport &support);

struct SandboxPlan {
  std::string scratch;                 // the worker's own folder: all of it, nothing else to write
  std::vector<std::string> readable;   // beyond the system's: paths to read and execute (the ICD
                                       // files and libraries the loader was pointed at, this binary)
  std::vector<std::string> writable;   // folders it makes files in: --trace's, the sanitizers' reports
};

// Paths a worker reads beyond the system's, from its environment: OCL_ICD_VENDORS's folder and the
// libraries its .icd files name by path, OCL_ICD_FILENAMES, LD_LIBRARY_PATH, LD_PRELOAD, and this
// executable's folder (the sanitizers' symbolizers read it).
std::vector<std::string> sandbox_backend_paths();
// Folders a worker writes reports in, from its environment: log_path of ASAN_OPTIONS, UBSAN_OPTIONS
// and TSAN_OPTIONS (a sanitizer build's reports, which its tests look for).
std::vector<std::string> sandbox_report_folders();

// Before the backend loads: no_new_privs, not dumpable, no core file, and Landlock's rules for plan
// (where the kernel has Landlock). "" or why the worker cannot be confined (it must not serve then).
std::string sandbox_confine(const SandboxPlan &plan);
// After the backend loaded: the seccomp filter on every thread of the process. "" or why not.
std::string sandbox_filter_calls();

}  // namespace fedcld

#include "worker_sandbox.h"

#include <fcntl.h>
#include <glob.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace fedcld {

namespace {

// Landlock's ABI (include/uapi/linux/landlock.h), spelt out here: the distributions' headers lag
// behind the kernels fedcld runs on, and each right is asked for only where the kernel knows it.
constexpr uint64_t kFsExecute = 1ull << 0, kFsWriteFile = 1ull << 1, kFsReadFile = 1ull << 2, kFsReadDir = 1ull << 3,
                   kFsRemoveDir = 1ull << 4, kFsRemoveFile = 1ull << 5, kFsMakeChar = 1ull << 6, kFsMakeDir = 1ull << 7,
                   kFsMakeReg = 1ull << 8, kFsMakeSock = 1ull << 9, kFsMakeFifo = 1ull << 10, kFsMakeBlock = 1ull << 11,
                   kFsMakeSym = 1ull << 12, kFsRefer = 1ull << 13, kFsTruncate = 1ull << 14, kFsIoctlDev = 1ull << 15;
constexpr uint64_t kNetBindTcp = 1ull << 0, kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0, kScopeSignal = 1ull << 1;
constexpr unsigned kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// What a rule on a file (not a folder) may grant.
constexpr uint64_t kFileRights = kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;
constexpr uint64_t kRead = kFsReadFile | kFsReadDir | kFsExecute;
constexpr uint64_t kDevice = kFsReadFile | kFsWriteFile | kFsReadDir | kFsIoctlDev;
constexpr uint64_t kEverything = (kFsIoctlDev << 1) - 1;

uint64_t handled_fs(int abi) {
  uint64_t rights = (kFsMakeSym << 1) - 1;
  if (abi >= 2) rights |= kFsRefer;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

// The system's, to read and execute: libraries, programs the backend runs (PoCL links kernels with
// /usr/bin/ld), the loader's and the resolver's files. Not /etc as a whole: keys live there.
const char *const kSystemPaths[] = {
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/opt",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload", "/etc/OpenCL",
    "/etc/alternatives", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/nvidia",
    "/etc/vulkan", "/etc/ssl/openssl.cnf", "/etc/ssl/certs",
};
const char *const kReadOnlyPaths[] = {"/proc", "/sys"};
// Device nodes: the harmless ones, and the GPUs' (NVIDIA, DRM render nodes, AMD's KFD, accel).
const char *const kDevicePatterns[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                                       "/dev/dri", "/dev/kfd", "/dev/accel", "/dev/nvidia*"};

struct Ruleset {
  int fd = -1;
  int abi = 0;
  uint64_t fs = 0;
  std::string problem;

  ~Ruleset() {
    if (fd >= 0) close(fd);
  }

  // Grants access beneath path (a folder) or to it (a file); a path that is not there is skipped.
  void allow(const std::string &path, uint64_t access) {
    if (!problem.empty() || path.empty()) return;
    int target = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (target < 0) {
      if (errno != ENOENT && errno != ENOTDIR && errno != EACCES) problem = path + ": " + std::strerror(errno);
      return;
    }
    struct stat status {};
    if (fstat(target, &status) == 0 && !S_ISDIR(status.st_mode)) access &= kFileRights;
    PathBeneathAttr rule{access & fs, target};
    if (rule.allowed_access && syscall(SYS_landlock_add_rule, fd, kRulePathBeneath, &rule, 0) != 0)
      problem = "landlock_add_rule " + path + ": " + std::strerror(errno);
    close(target);
  }
};

int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? int(abi) : 0;
}

std::string landlock_confine(const SandboxPlan &plan) {
  Ruleset rules;
  rules.abi = landlock_abi();
  if (rules.abi == 0) return {};  // said at start, in the main process
  rules.fs = handled_fs(rules.abi);
  RulesetAttr attr{rules.fs, rules.abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                   rules.abi >= 6 ? kScopeAbstractUnixSocket | kScopeSignal : 0};
  size_t size = rules.abi >= 6 ? sizeof attr : rules.abi >= 4 ? offsetof(RulesetAttr, scoped) : offsetof(RulesetAttr, handled_access_net);
  rules.fd = int(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (rules.fd < 0) return std::string("landlock_create_ruleset: ") + std::strerror(errno);
  for (const char *path : kSystemPaths) rules.allow(path, kRead);
  for (const std::string &path : plan.readable) rules.allow(path, kRead);
  for (const char *path : kReadOnlyPaths) rules.allow(path, kFsReadFile | kFsReadDir);
  for (const char *pattern : kDevicePatterns) {
    glob_t found{};
    if (glob(pattern, 0, nullptr, &found) == 0)
      for (size_t i = 0; i < found.gl_pathc; i++) rules.allow(found.gl_pathv[i], kDevice);
    globfree(&found);
  }
  rules.allow(plan.scratch, kEverything);
  for (const std::string &folder : plan.writable) rules.allow(folder, kFsReadDir | kFsMakeReg | kFsWriteFile | kFsTruncate);
  if (!rules.problem.empty()) return rules.problem;
  if (syscall(SYS_landlock_restrict_self, rules.fd, 0) != 0) return std::string("landlock_restrict_self: ") + std::strerror(errno);
  return {};
}

// The seccomp filter: a list of refusals over an allowed default (the backends' needs are not known
// well enough for a list of what is allowed: NVIDIA's driver alone makes hundreds of kinds of call).
#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
constexpr uint32_t kX32Bit = 0x40000000;  // x32's system calls share the architecture: refused alike
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
constexpr uint32_t kX32Bit = 0;
#else
constexpr uint32_t kAuditArch = 0;
constexpr uint32_t kX32Bit = 0;
#endif

enum class Refusal { eperm, enosys, unless_own_pid, new_namespaces };
struct CallRule {
  long number;
  Refusal refusal;
};

const CallRule kCallRules[] = {
    // Reaching into other processes: their memory, their descriptors, their execution.
    {SYS_ptrace, Refusal::eperm}, {SYS_process_vm_readv, Refusal::eperm}, {SYS_process_vm_writev, Refusal::eperm},
    {SYS_kcmp, Refusal::eperm}, {SYS_pidfd_getfd, Refusal::eperm}, {SYS_perf_event_open, Refusal::eperm},
    // Signals: to itself only (a crash's abort, raise); callers of pidfds fall back without them.
    {SYS_kill, Refusal::unless_own_pid}, {SYS_tgkill, Refusal::unless_own_pid},
    {SYS_rt_sigqueueinfo, Refusal::unless_own_pid}, {SYS_rt_tgsigqueueinfo, Refusal::unless_own_pid},
    {SYS_tkill, Refusal::eperm}, {SYS_pidfd_open, Refusal::enosys}, {SYS_pidfd_send_signal, Refusal::enosys},
    // New namespaces (a user namespace's capabilities, mounts), and the mounts themselves. clone3's
    // flags are in memory the filter cannot read: ENOSYS makes glibc use clone, whose flags it can.
    {SYS_clone, Refusal::new_namespaces}, {SYS_clone3, Refusal::enosys}, {SYS_unshare, Refusal::eperm},
    {SYS_setns, Refusal::eperm}, {SYS_mount, Refusal::eperm}, {SYS_umount2, Refusal::eperm},
    {SYS_pivot_root, Refusal::eperm}, {SYS_chroot, Refusal::eperm}, {SYS_open_tree, Refusal::eperm},
    {SYS_move_mount, Refusal::eperm}, {SYS_fsopen, Refusal::eperm}, {SYS_fsconfig, Refusal::eperm},
    {SYS_fsmount, Refusal::eperm}, {SYS_fspick, Refusal::eperm}, {SYS_mount_setattr, Refusal::eperm},
    // Identity and privileges: a worker keeps the account it was given.
    {SYS_setuid, Refusal::eperm}, {SYS_setgid, Refusal::eperm}, {SYS_setreuid, Refusal::eperm},
    {SYS_setregid, Refusal::eperm}, {SYS_setresuid, Refusal::eperm}, {SYS_setresgid, Refusal::eperm},
    {SYS_setgroups, Refusal::eperm}, {SYS_setfsuid, Refusal::eperm}, {SYS_setfsgid, Refusal::eperm},
    {SYS_capset, Refusal::eperm},
    // The kernel's own surfaces no session needs: keys, BPF, faults handled in user space, io_uring
    // (its requests bypass this filter), modules, the machine's state.
    {SYS_keyctl, Refusal::eperm}, {SYS_add_key, Refusal::eperm}, {SYS_request_key, Refusal::eperm},
    {SYS_bpf, Refusal::eperm}, {SYS_userfaultfd, Refusal::eperm}, {SYS_io_uring_setup, Refusal::enosys},
    {SYS_io_uring_enter, Refusal::enosys}, {SYS_io_uring_register, Refusal::enosys},
    {SYS_open_by_handle_at, Refusal::eperm}, {SYS_init_module, Refusal::eperm}, {SYS_finit_module, Refusal::eperm},
    {SYS_delete_module, Refusal::eperm}, {SYS_kexec_load, Refusal::eperm}, {SYS_kexec_file_load, Refusal::eperm},
    {SYS_reboot, Refusal::eperm}, {SYS_swapon, Refusal::eperm}, {SYS_swapoff, Refusal::eperm},
    {SYS_acct, Refusal::eperm}, {SYS_syslog, Refusal::eperm}, {SYS_quotactl, Refusal::eperm},
};

constexpr uint32_t kNewNamespaces = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                    CLONE_NEWNET | CLONE_NEWCGROUP;

sock_filter statement(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter jump(uint16_t code, uint32_t k, uint8_t if_true, uint8_t if_false) { return BPF_JUMP(code, k, if_true, if_false); }

std::vector<sock_filter> call_filter() {
  const uint32_t allow = SECCOMP_RET_ALLOW, eperm = SECCOMP_RET_ERRNO | EPERM, enosys = SECCOMP_RET_ERRNO | ENOSYS;
  // The low half of the first argument (a pid, or clone's flags; the kernel reads them as 32 bits).
  const uint32_t first_argument = offsetof(seccomp_data, args[0]);
  const uint32_t own_pid = uint32_t(getpid());
  std::vector<sock_filter> program = {
      statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      jump(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      statement(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  if (kX32Bit) {
    program.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 0, 1));
    program.push_back(statement(BPF_RET | BPF_K, eperm));
  }
  // For call number: the first argument tested (test: BPF_JEQ or BPF_JSET against value), and the
  // call answered by what the test says. The number is no longer in the accumulator after: each
  // such rule ends in a return.
  auto argument_rule = [&](long number, uint16_t test, uint32_t value, uint32_t if_true, uint32_t if_false) {
    program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(number), 0, 4));
    program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, first_argument));
    program.push_back(jump(BPF_JMP | test | BPF_K, value, 0, 1));
    program.push_back(statement(BPF_RET | BPF_K, if_true));
    program.push_back(statement(BPF_RET | BPF_K, if_false));
  };
  for (const CallRule &rule : kCallRules) {
    switch (rule.refusal) {
      case Refusal::eperm:
      case Refusal::enosys:
        program.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(rule.number), 0, 1));
        program.push_back(statement(BPF_RET | BPF_K, rule.refusal == Refusal::eperm ? eperm : enosys));
        break;
      case Refusal::unless_own_pid: argument_rule(rule.number, BPF_JEQ, own_pid, allow, eperm); break;
      case Refusal::new_namespaces: argument_rule(rule.number, BPF_JSET, kNewNamespaces, eperm, allow); break;
    }
  }
  program.push_back(statement(BPF_RET | BPF_K, allow));
  return program;
}

void add_existing(std::vector<std::string> &paths, const std::string &path) {
  if (!path.empty() && access(path.c_str(), F_OK) == 0) paths.push_back(path);
}

void add_list(std::vector<std::string> &paths, const char *list) {
  for (std::string rest = list ? list : ""; !rest.empty();) {
    size_t colon = rest.find(':');
    add_existing(paths, rest.substr(0, colon));
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
}

// The values of option name in the sanitizers' option variables (a sanitized build's tests set them).
std::vector<std::string> sanitizer_option_values(const std::string &name) {
  std::vector<std::string> values;
  for (const char *variable : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    std::string options = std::string(":") + (std::getenv(variable) ? std::getenv(variable) : "");
    size_t at = options.find(":" + name + "=");
    if (at == std::string::npos) continue;
    at += name.size() + 2;
    values.push_back(options.substr(at, options.find(':', at) - at));
  }
  return values;
}

}  // namespace

SandboxSupport sandbox_support() { return {landlock_abi(), kAuditArch != 0}; }

std::string sandbox_describe(const SandboxSupport &support) {
  std::string text = "session workers run without new privileges, not dumpable";
  text += support.seccomp ? ", under a seccomp filter" : ", without a seccomp filter (not built for this architecture)";
  if (support.landlock_abi == 0) return text + ", without Landlock (this kernel has none: their files and TCP are not confined)";
  text += " and Landlock ABI " + std::to_string(support.landlock_abi) + " (files";
  if (support.landlock_abi >= 4) text += ", TCP";
  text += support.landlock_abi >= 6 ? ", signals, abstract sockets)" : "; signals by the seccomp filter alone)";
  return text;
}

std::vector<std::string> sandbox_backend_paths() {
  std::vector<std::string> paths;
  if (const char *vendors = std::getenv("OCL_ICD_VENDORS")) {
    add_existing(paths, vendors);
    glob_t found{};
    if (glob((std::string(vendors) + "/*.icd").c_str(), 0, nullptr, &found) == 0)
      for (size_t i = 0; i < found.gl_pathc; i++) {
        std::string library;
        std::getline(std::ifstream(found.gl_pathv[i]), library);
        if (!library.empty() && library.front() == '/') add_existing(paths, library);
      }
    globfree(&found);
  }
  add_list(paths, std::getenv("OCL_ICD_FILENAMES"));
  add_list(paths, std::getenv("LD_LIBRARY_PATH"));
  // What is preloaded into the worker is preloaded into what it runs too (PoCL's linker).
  std::string preload = std::getenv("LD_PRELOAD") ? std::getenv("LD_PRELOAD") : "";
  std::replace(preload.begin(), preload.end(), ' ', ':');
  add_list(paths, preload.c_str());
  // A sanitizer reads its suppressions in every process it starts in, PoCL's linker among them.
  for (const std::string &file : sanitizer_option_values("suppressions")) add_existing(paths, file);
  char self[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length > 0) {
    std::string exe(self, size_t(length));
    add_existing(paths, exe.substr(0, exe.rfind('/')));
  }
  return paths;
}

std::vector<std::string> sandbox_report_folders() {
  std::vector<std::string> folders;
  for (const std::string &path : sanitizer_option_values("log_path")) add_existing(folders, path.substr(0, path.rfind('/')));
  return folders;
}

std::string sandbox_confine(const SandboxPlan &plan) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs: ") + std::strerror(errno);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return std::string("PR_SET_DUMPABLE: ") + std::strerror(errno);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  return landlock_confine(plan);
}

std::string sandbox_filter_calls() {
  if (kAuditArch == 0) return {};  // said at start
  std::vector<sock_filter> program = call_filter();
  sock_fprog filter{uint16_t(program.size()), program.data()};
  long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &filter);
  if (result < 0) return std::string("seccomp: ") + std::strerror(errno);
  if (result > 0) return "seccomp: thread " + std::to_string(result) + " could not take the filter";
  return {};
}

}  // namespace fedcld

/* A hostile session's code, for the daemon's worker processes (LD_PRELOAD): a kernel on a CPU device
 * is native code in the worker, so whatever a function of the worker can do, a session can. At the
 * first clEnqueueNDRangeKernel of the process (the backend is loaded and the worker confined by
 * then), it tries, one by one, what a session must not manage, and writes a line per try to stderr
 * (the daemon's log): "hostile: NAME: done" when it worked, "hostile: NAME: refused (ERRNO)" when
 * it did not. What it aims at comes from the environment:
 *   FEDCL_TEST_HOSTILE_READ   files to read, colon-separated (the key list, the daemons' key)
 *   FEDCL_TEST_HOSTILE_WRITE  a file to create (in a cache another session's worker would load)
 *   FEDCL_TEST_HOSTILE_PORT   a loopback TCP port to connect to (the daemon's own)
 * and the main process (its parent) and the other workers (its siblings) are found in /proc. Then
 * the launch goes on as the backend does it. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static void report(const char *name, const char *target, int worked) {
  if (worked) fprintf(stderr, "hostile: %s %s: done\n", name, target);
  else fprintf(stderr, "hostile: %s %s: refused (%s)\n", name, target, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
}

static void try_read(const char *path) {
  int fd = open(path, O_RDONLY);
  report("read", path, fd >= 0);
  if (fd >= 0) close(fd);
}

static void try_write(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT, 0644);
  report("write", path, fd >= 0);
  if (fd >= 0) close(fd);
}

static void try_process(pid_t pid, const char *who) {
  char target[64];
  snprintf(target, sizeof target, "%s %d", who, (int)pid);
  errno = 0;
  report("signal", target, kill(pid, 0) == 0);
  long attached = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
  report("ptrace", target, attached == 0);
  if (attached == 0) ptrace(PTRACE_DETACH, pid, NULL, NULL);
  char byte = 0, *address = (char *)&try_process;  /* the same binary: mapped there too */
  struct iovec local = {&byte, 1}, remote = {address, 1};
  report("process_vm_readv", target, process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
  int fd = open(path, O_RDONLY);
  report("open-mem", target, fd >= 0);
  if (fd >= 0) close(fd);
}

/* The worker's siblings: other processes whose parent is the main process. */
static void try_siblings(void) {
  DIR *proc = opendir("/proc");
  if (!proc) return;
  pid_t self = getpid(), parent = getppid();
  for (struct dirent *entry; (entry = readdir(proc));) {
    pid_t pid = (pid_t)atoi(entry->d_name);
    if (pid <= 0 || pid == self) continue;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *stat = fopen(path, "r");
    if (!stat) continue;
    size_t got = fread(text, 1, sizeof text - 1, stat);
    fclose(stat);
    text[got] = '\0';
    char *after_name = strrchr(text, ')');
    int ppid = 0;
    if (after_name && sscanf(after_name + 1, " %*c %d", &ppid) == 1 && ppid == parent) try_process(pid, "worker");
  }
  closedir(proc);
}

static void try_connect(const char *port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char target[32];
  snprintf(target, sizeof target, "127.0.0.1:%s", port);
  report("connect", target, s >= 0 && connect(s, (struct sockaddr *)&to, sizeof to) == 0);
  if (s >= 0) close(s);
}

static void attack(void) {
  const char *reads = getenv("FEDCL_TEST_HOSTILE_READ");
  for (char *list = reads ? strdup(reads) : NULL, *rest = list, *path; list && (path = strsep(&rest, ":"));)
    if (*path) try_read(path);
  if (getenv("FEDCL_TEST_HOSTILE_WRITE")) try_write(getenv("FEDCL_TEST_HOSTILE_WRITE"));
  if (getenv("FEDCL_TEST_HOSTILE_PORT")) try_connect(getenv("FEDCL_TEST_HOSTILE_PORT"));
  try_process(getppid(), "main");
  try_siblings();
  report("unshare", "user namespace", unshare(CLONE_NEWUSER) == 0);
  fprintf(stderr, "hostile: dumpable %d, no_new_privs %d\n", prctl(PR_GET_DUMPABLE), prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  fprintf(stderr, "hostile: done trying\n");
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                                                       const size_t *offset, const size_t *global, const size_t *local,
                                                       cl_uint num_events, const cl_event *events, cl_event *event) {
  static int attacked = 0;
  if (!__atomic_exchange_n(&attacked, 1, __ATOMIC_SEQ_CST)) attack();
  typedef cl_int (*Real)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint,
                         const cl_event *, cl_event *);
  Real real = (Real)dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
  return real(queue, kernel, dims, offset, global, local, num_events, events, event);
}

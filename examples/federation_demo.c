/* One buffer, two nodes: a kernel on node A's device writes a buffer, and a kernel on node B's device
   checks every word of it. The program never copies the buffer: it is plain OpenCL, one context over
   both devices. fedcl sees that node B's copy is stale when B's kernel needs it and has node A's
   daemon send the bytes to node B's daemon over their peer link, not through this program.
   Then the move alone is timed (clEnqueueMigrateMemObjects to node B, after node A wrote a new
   pattern each time; a kernel's own time would hide the copy's) and printed in MB/s, every copy
   checked on node B. Exits non-zero when a word differs or an OpenCL call fails.
   Usage: federation_demo [-m MiB] [-r REPEATS]
   (FEDCL_EXAMPLE_PLATFORM=fedcl picks fedcl's platform; it needs two devices, e.g. two daemons) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

static const char kSource[] =
    "uint pattern(size_t i, uint seed) { return (uint)i * 2654435761u ^ seed * 0x9e3779b9u; }\n"
    "__kernel void fill(__global uint *x, uint seed) {\n"
    "  size_t i = get_global_id(0);\n"
    "  x[i] = pattern(i, seed);\n"
    "}\n"
    "__kernel void check(__global const uint *x, uint seed, __global uint *wrong) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (x[i] != pattern(i, seed)) atomic_inc(wrong);\n"
    "}\n";

enum { kNameBytes = 256, kMaxRepeats = 100 };

static unsigned long positive(const char *text, unsigned long max) {
  char *end;
  unsigned long value = text ? strtoul(text, &end, 10) : 0;
  if (!text || *end || value == 0 || value > max) {
    fprintf(stderr, "usage: federation_demo [-m MiB (1..4096)] [-r REPEATS (1..%d)]\n", kMaxRepeats);
    exit(2);
  }
  return value;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  cl_command_queue a, b;
  cl_kernel fill, check;
  cl_mem buffer, wrong;
  size_t words;
} Demo;

/* Node A's kernel writes pattern seed over the whole buffer; returns when it is done. */
static void fill_on_a(const Demo *d, cl_uint seed) {
  EXAMPLE_CHECK(clSetKernelArg(d->fill, 1, sizeof seed, &seed));
  EXAMPLE_CHECK(clEnqueueNDRangeKernel(d->a, d->fill, 1, NULL, &d->words, NULL, 0, NULL, NULL));
  EXAMPLE_CHECK(clFinish(d->a));
}

/* Node B's kernel compares every word with pattern seed; returns how many differ. */
static cl_uint check_on_b(const Demo *d, cl_uint seed) {
  cl_uint wrong = 0;
  EXAMPLE_CHECK(clEnqueueWriteBuffer(d->b, d->wrong, CL_FALSE, 0, sizeof wrong, &wrong, 0, NULL, NULL));
  EXAMPLE_CHECK(clSetKernelArg(d->check, 1, sizeof seed, &seed));
  EXAMPLE_CHECK(clEnqueueNDRangeKernel(d->b, d->check, 1, NULL, &d->words, NULL, 0, NULL, NULL));
  EXAMPLE_CHECK(clEnqueueReadBuffer(d->b, d->wrong, CL_TRUE, 0, sizeof wrong, &wrong, 0, NULL, NULL));
  return wrong;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);  /* each step's line as it happens, also through a pipe */
  unsigned long mib = 256, repeats = 3;
  for (int i = 1; i < argc; i++) {
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "-m")) mib = positive(value, 4096), i++;
    else if (!strcmp(argv[i], "-r")) repeats = positive(value, kMaxRepeats), i++;
    else positive(NULL, 0);
  }

  cl_platform_id platform = example_pick_platform();
  cl_device_id devices[2];
  cl_uint count = 0;
  cl_int status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, devices, &count);
  if (status != CL_SUCCESS && status != CL_DEVICE_NOT_FOUND) EXAMPLE_CHECK(status);
  if (count < 2) {
    fprintf(stderr, "federation_demo: the platform has %u device(s); it needs two, e.g. two daemons in FEDCL_HOSTS\n",
            count);
    return 1;
  }
  for (int k = 0; k < 2; k++) {
    char name[kNameBytes] = "";
    EXAMPLE_CHECK(clGetDeviceInfo(devices[k], CL_DEVICE_NAME, sizeof name, name, NULL));
    printf("node %c's device: %s\n", "AB"[k], name);
  }

  Demo d;
  d.words = mib << 18;  /* MiB of 4-byte words */
  cl_context context = clCreateContext(NULL, 2, devices, NULL, NULL, &status);
  EXAMPLE_CHECK(status);
  d.a = clCreateCommandQueue(context, devices[0], 0, &status);
  EXAMPLE_CHECK(status);
  d.b = clCreateCommandQueue(context, devices[1], 0, &status);
  EXAMPLE_CHECK(status);
  cl_program program = clCreateProgramWithSource(context, 1, (const char *[]){kSource}, NULL, &status);
  EXAMPLE_CHECK(status);
  EXAMPLE_CHECK(clBuildProgram(program, 2, devices, "", NULL, NULL));
  d.fill = clCreateKernel(program, "fill", &status);
  EXAMPLE_CHECK(status);
  d.check = clCreateKernel(program, "check", &status);
  EXAMPLE_CHECK(status);
  d.buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, d.words * 4, NULL, &status);
  EXAMPLE_CHECK(status);
  d.wrong = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof(cl_uint), NULL, &status);
  EXAMPLE_CHECK(status);
  EXAMPLE_CHECK(clSetKernelArg(d.fill, 0, sizeof d.buffer, &d.buffer));
  EXAMPLE_CHECK(clSetKernelArg(d.check, 0, sizeof d.buffer, &d.buffer));
  EXAMPLE_CHECK(clSetKernelArg(d.check, 2, sizeof d.wrong, &d.wrong));
  printf("one context over both devices, one %lu MiB buffer in it\n", mib);

  /* The story: A writes, B reads; the move happens because B's kernel needs the bytes. */
  double start = example_now();
  fill_on_a(&d, 1);
  printf("kernel on node A wrote the buffer (%.0f ms)\n", (example_now() - start) * 1e3);
  start = example_now();
  cl_uint wrong = check_on_b(&d, 1);
  double took = example_now() - start;
  if (wrong) printf("kernel on node B read it: %u of %zu words differ from node A's (%.0f ms)\n", wrong, d.words, took * 1e3);
  else printf("kernel on node B read it: all %zu words as node A wrote them (%.0f ms)\n", d.words, took * 1e3);
  printf("  (B's copy was stale, so fedcl had node A's daemon send the buffer to node B's first)\n");
  int failed = wrong != 0;

  /* The speed: the move alone, A -> B, after each new pattern from A. */
  double seconds[kMaxRepeats];
  for (unsigned long r = 0; r < repeats; r++) {
    cl_uint seed = (cl_uint)r + 2;
    fill_on_a(&d, seed);
    start = example_now();
    EXAMPLE_CHECK(clEnqueueMigrateMemObjects(d.b, 1, &d.buffer, 0, 0, NULL, NULL));
    EXAMPLE_CHECK(clFinish(d.b));
    seconds[r] = example_now() - start;
    wrong = check_on_b(&d, seed);
    if (wrong) printf("move %lu: %u words differ on node B\n", r + 1, wrong);
    failed |= wrong != 0;
  }
  qsort(seconds, repeats, sizeof seconds[0], compare_doubles);
  double median = repeats % 2 ? seconds[repeats / 2] : (seconds[repeats / 2 - 1] + seconds[repeats / 2]) / 2;
  printf("moved it A -> B %lu more times (clEnqueueMigrateMemObjects), a new pattern each time%s\n", repeats,
         failed ? "" : ", all checked on B");
  printf("migration: %lu MiB in %.0f ms (median of %lu) = %.0f MB/s\n", mib, median * 1e3, repeats,
         (double)(d.words * 4) / median * 1e-6);

  clReleaseMemObject(d.buffer);
  clReleaseMemObject(d.wrong);
  clReleaseKernel(d.fill);
  clReleaseKernel(d.check);
  clReleaseProgram(program);
  clReleaseCommandQueue(d.a);
  clReleaseCommandQueue(d.b);
  clReleaseContext(context);
  printf("%s\n", failed ? "FAIL: node B did not see what node A wrote" : "PASS");
  return failed;
}

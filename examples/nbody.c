/* All-pairs gravitational NBody, organised like NVIDIA's OpenCL NBody sample: float4 positions (w is
   the mass) and velocities, a kernel that walks the bodies in __local tiles, two position and two
   velocity buffers that swap roles every step, and the positions read back every step (the sample
   draws them). The final positions are checked against the same integration done on the CPU.
   Usage: nbody [-n BODIES] [-s STEPS] [-l LOCAL_SIZE] [--no-check]
   (FEDCL_EXAMPLE_PLATFORM=fedcl picks fedcl's platform) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

static const char kSource[] =
    "__kernel void integrate_bodies(__global float4 *new_pos, __global float4 *new_vel,\n"
    "                               __global const float4 *old_pos, __global const float4 *old_vel,\n"
    "                               float dt, float damping, float softening2, uint n,\n"
    "                               __local float4 *tile) {\n"
    "  uint i = get_global_id(0), lid = get_local_id(0), tile_size = get_local_size(0);\n"
    "  float4 pos = i < n ? old_pos[i] : (float4)(0.0f);\n"
    "  float3 acc = (float3)(0.0f);\n"
    "  for (uint start = 0; start < n; start += tile_size) {\n"
    "    uint j = start + lid;\n"
    "    tile[lid] = j < n ? old_pos[j] : (float4)(0.0f);  /* padding has no mass */\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint k = 0; k < tile_size; k++) {\n"
    "      float4 other = tile[k];\n"
    "      float3 r = other.xyz - pos.xyz;\n"
    "      float inv = rsqrt(r.x * r.x + r.y * r.y + r.z * r.z + softening2);\n"
    "      acc += r * (other.w * inv * inv * inv);\n"
    "    }\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (i >= n) return;\n"
    "  float4 vel = old_vel[i];\n"
    "  vel.xyz = (vel.xyz + acc * dt) * damping;\n"
    "  pos.xyz += vel.xyz * dt;\n"
    "  new_pos[i] = pos;\n"
    "  new_vel[i] = vel;\n"
    "}\n";

static const float kDeltaTime = 0.01f, kDamping = 1.0f, kSoftening = 0.1f;
/* Float rounding differs between the device and the CPU. For up to a few hundred steps the difference
   stays below 1e-5 of the cluster's size; N-body systems are chaotic, so over thousands of steps it
   grows past any bound (use --no-check there). */
static const double kTolerance = 1e-4;
enum { kFlopsPerInteraction = 20 };

typedef struct {
  cl_uint bodies, steps;
  size_t local_size;
  int check;
} Options;

static void usage(void) {
  fprintf(stderr, "usage: nbody [-n BODIES] [-s STEPS] [-l LOCAL_SIZE] [--no-check]\n");
  exit(2);
}

static unsigned long positive(const char *text) {
  char *end;
  unsigned long value = text ? strtoul(text, &end, 10) : 0;
  if (!text || *end || value == 0) usage();
  return value;
}

static Options parse_options(int argc, char **argv) {
  Options options = {4096, 20, 256, 1};
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "-n") || !strcmp(arg, "--bodies")) options.bodies = (cl_uint)positive(value), i++;
    else if (!strcmp(arg, "-s") || !strcmp(arg, "--steps")) options.steps = (cl_uint)positive(value), i++;
    else if (!strcmp(arg, "-l") || !strcmp(arg, "--local")) options.local_size = positive(value), i++;
    else if (!strcmp(arg, "--no-check")) options.check = 0;
    else usage();
  }
  return options;
}

static float random_unit(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* A ball of radius 1 and mass 1, turning at the circular speed of its plane. */
static void initial_state(cl_uint n, cl_float4 *pos, cl_float4 *vel) {
  unsigned state = 12345;
  for (cl_uint i = 0; i < n; i++) {
    float x, y, z;
    do {
      x = random_unit(&state), y = random_unit(&state), z = random_unit(&state);
    } while (x * x + y * y + z * z > 1.0f);
    pos[i] = (cl_float4){{x, y, z, 1.0f / (float)n}};
    vel[i] = (cl_float4){{-y, x, 0.0f, 0.0f}};
  }
}

/* One step of the kernel's integration, in the same order, on the CPU. */
static void cpu_step(cl_uint n, const cl_float4 *pos, const cl_float4 *vel, cl_float4 *new_pos, cl_float4 *new_vel) {
  float softening2 = kSoftening * kSoftening;
  for (cl_uint i = 0; i < n; i++) {
    float acc[3] = {0.0f, 0.0f, 0.0f};
    for (cl_uint j = 0; j < n; j++) {
      float r[3] = {pos[j].s[0] - pos[i].s[0], pos[j].s[1] - pos[i].s[1], pos[j].s[2] - pos[i].s[2]};
      float inv = 1.0f / sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + softening2);
      float s = pos[j].s[3] * inv * inv * inv;
      for (int d = 0; d < 3; d++) acc[d] += r[d] * s;
    }
    new_vel[i] = vel[i];
    new_pos[i] = pos[i];
    for (int d = 0; d < 3; d++) {
      new_vel[i].s[d] = (vel[i].s[d] + acc[d] * kDeltaTime) * kDamping;
      new_pos[i].s[d] = pos[i].s[d] + new_vel[i].s[d] * kDeltaTime;
    }
  }
}

/* Largest position difference, relative to the largest distance of a body from the origin. */
static double relative_error(cl_uint n, const cl_float4 *got, const cl_float4 *expected) {
  double worst = 0.0, extent = 0.0;
  for (cl_uint i = 0; i < n; i++) {
    double diff = 0.0, norm = 0.0;
    for (int d = 0; d < 3; d++) {
      double delta = (double)got[i].s[d] - expected[i].s[d];
      diff += delta * delta;
      norm += (double)expected[i].s[d] * expected[i].s[d];
    }
    if (!(diff <= worst)) worst = diff;  /* also catches NaN */
    if (norm > extent) extent = norm;
  }
  return sqrt(worst) / (extent > 0.0 ? sqrt(extent) : 1.0);
}

static int check(const Options *options, const cl_float4 *initial_pos, const cl_float4 *initial_vel,
                 const cl_float4 *device_pos) {
  size_t bytes = options->bodies * sizeof(cl_float4);
  cl_float4 *pos[2] = {malloc(bytes), malloc(bytes)}, *vel[2] = {malloc(bytes), malloc(bytes)};
  if (!pos[0] || !pos[1] || !vel[0] || !vel[1]) {
    fprintf(stderr, "out of memory for the CPU reference\n");
    return 1;
  }
  memcpy(pos[0], initial_pos, bytes);
  memcpy(vel[0], initial_vel, bytes);
  int current = 0;
  for (cl_uint step = 0; step < options->steps; step++, current ^= 1)
    cpu_step(options->bodies, pos[current], vel[current], pos[current ^ 1], vel[current ^ 1]);
  double error = relative_error(options->bodies, device_pos, pos[current]);
  int ok = error <= kTolerance;
  printf("%s: largest position error %.3g of the cluster size (tolerance %.0e)\n", ok ? "PASS" : "FAIL", error,
         kTolerance);
  for (int i = 0; i < 2; i++) free(pos[i]), free(vel[i]);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Options options = parse_options(argc, argv);
  cl_uint n = options.bodies;
  size_t bytes = n * sizeof(cl_float4);
  cl_float4 *initial_pos = malloc(bytes), *initial_vel = malloc(bytes), *host_pos = malloc(bytes);
  if (!initial_pos || !initial_vel || !host_pos) {
    fprintf(stderr, "out of memory for %u bodies\n", n);
    return 1;
  }
  initial_state(n, initial_pos, initial_vel);

  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  example_open(&device, &context, &queue);
  cl_int status;
  cl_program program = example_build(context, device, kSource);
  cl_kernel kernel = clCreateKernel(program, "integrate_bodies", &status);
  EXAMPLE_CHECK(status);
  size_t kernel_limit = 0;
  EXAMPLE_CHECK(clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_limit,
                                         &kernel_limit, NULL));
  size_t local = options.local_size < kernel_limit ? options.local_size : kernel_limit;
  size_t global = (n + local - 1) / local * local;

  /* [0] is read and [1] written in even steps, the other way round in odd ones. */
  cl_mem pos[2], vel[2];
  for (int i = 0; i < 2; i++) {
    pos[i] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &status);
    EXAMPLE_CHECK(status);
    vel[i] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &status);
    EXAMPLE_CHECK(status);
  }
  EXAMPLE_CHECK(clEnqueueWriteBuffer(queue, pos[0], CL_FALSE, 0, bytes, initial_pos, 0, NULL, NULL));
  EXAMPLE_CHECK(clEnqueueWriteBuffer(queue, vel[0], CL_FALSE, 0, bytes, initial_vel, 0, NULL, NULL));
  EXAMPLE_CHECK(clFinish(queue));

  float dt = kDeltaTime, damping = kDamping, softening2 = kSoftening * kSoftening;
  int read = 0;
  double start = example_now();
  for (cl_uint step = 0; step < options.steps; step++, read ^= 1) {
    int write = read ^ 1;
    EXAMPLE_CHECK(clSetKernelArg(kernel, 0, sizeof(cl_mem), &pos[write]));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 1, sizeof(cl_mem), &vel[write]));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 2, sizeof(cl_mem), &pos[read]));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 3, sizeof(cl_mem), &vel[read]));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 4, sizeof dt, &dt));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 5, sizeof damping, &damping));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 6, sizeof softening2, &softening2));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 7, sizeof n, &n));
    EXAMPLE_CHECK(clSetKernelArg(kernel, 8, local * sizeof(cl_float4), NULL));
    EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL));
    EXAMPLE_CHECK(clEnqueueReadBuffer(queue, pos[write], CL_TRUE, 0, bytes, host_pos, 0, NULL, NULL));
  }
  double seconds = (example_now() - start) / options.steps;
  double interactions = (double)n * n / seconds;
  printf("%u bodies, %u steps, work-group size %zu\n", n, options.steps, local);
  printf("time per step: %.3f ms (%.3g interactions/s, %.2f GFLOP/s at %d flops each)\n", seconds * 1e3,
         interactions, interactions * kFlopsPerInteraction * 1e-9, kFlopsPerInteraction);

  int result = options.check ? check(&options, initial_pos, initial_vel, host_pos) : 0;

  for (int i = 0; i < 2; i++) {
    clReleaseMemObject(pos[i]);
    clReleaseMemObject(vel[i]);
  }
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(initial_pos);
  free(initial_vel);
  free(host_pos);
  return result;
}

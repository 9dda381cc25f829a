/* A data-parallel training step, as frameworks run it across nodes: every device holds the same
   model (P float parameters) and its own shard of the data, computes the gradient of its shard,
   sums the gradients of all devices with one all-reduce (clEnqueueAllReduceBuffer: the gradients
   move daemon to daemon, summed on the way, never through this program), and applies the same
   update. The model: a linear regression with one feature per parameter, shard d holding x[d][j] and
   targets t[d][j]; the gradient of shard d is x (x w - t), the step w -= rate * sum / devices.
   Then the same steps run on the first device alone over the whole batch, and both models must
   agree (relative error at most 1e-5: the all-reduce adds in another order) and every device's copy
   must be the same bits. Prints seconds per step split and on one device.
   Usage: allreduce_training [-p PARAMETERS] [-s STEPS] [-d DEVICES]   (default 16Mi = 64 MiB, 5 steps,
   every device of the platform; FEDCL_EXAMPLE_PLATFORM=fedcl picks fedcl's, e.g. over 4 daemons) */
#include <CL/cl_fedcl_transfer.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

static const char kSource[] =
    "__kernel void gradient(__global const float *w, __global const float *x, __global const float *t,\n"
    "                       __global float *g) {\n"
    "  size_t j = get_global_id(0);\n"
    "  g[j] = x[j] * (x[j] * w[j] - t[j]);\n"
    "}\n"
    "/* The whole batch on one device: the shards one after the other, each P values. */\n"
    "__kernel void gradient_all(__global const float *w, __global const float *x, __global const float *t,\n"
    "                           __global float *g, uint shards, ulong p) {\n"
    "  size_t j = get_global_id(0);\n"
    "  float sum = 0.0f;\n"
    "  for (uint d = 0; d < shards; d++) sum += x[d * p + j] * (x[d * p + j] * w[j] - t[d * p + j]);\n"
    "  g[j] = sum;\n"
    "}\n"
    "__kernel void update(__global float *w, __global const float *g, float scale) {\n"
    "  size_t j = get_global_id(0);\n"
    "  w[j] -= scale * g[j];\n"
    "}\n";

enum { kMaxDevices = 64 };
static const float kRate = 0.125f;

static float feature(size_t d, size_t j) { return 1.0f + (float)((j * 7 + d) % 4) * 0.25f; }
static float target(size_t d, size_t j) { return (float)((j * 13 + d * 5) % 17) - 8.0f; }

static unsigned long option(const char *text, unsigned long max) {
  char *end;
  unsigned long value = text ? strtoul(text, &end, 10) : 0;
  if (!text || *end || value == 0 || value > max) {
    fprintf(stderr, "usage: allreduce_training [-p PARAMETERS] [-s STEPS] [-d DEVICES]\n");
    exit(2);
  }
  return value;
}

static cl_mem buffer(cl_context context, size_t bytes, const void *contents) {
  cl_int err;
  cl_mem mem = clCreateBuffer(context, CL_MEM_READ_WRITE | (contents ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)contents, &err);
  EXAMPLE_CHECK(err);
  return mem;
}

static void run(cl_command_queue queue, cl_kernel kernel, size_t p) {
  EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &p, NULL, 0, NULL, NULL));
}

int main(int argc, char **argv) {
  size_t p = (size_t)16 << 20, steps = 5, wanted = kMaxDevices;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-p")) p = option(argv[++i < argc ? i : 0], 1ul << 28);
    else if (!strcmp(argv[i], "-s")) steps = option(argv[++i < argc ? i : 0], 1000);
    else if (!strcmp(argv[i], "-d")) wanted = option(argv[++i < argc ? i : 0], kMaxDevices);
    else option(NULL, 0);
  }
  cl_platform_id platform = example_pick_platform();
  cl_device_id devices[kMaxDevices];
  cl_uint count = example_devices(platform, devices, kMaxDevices);
  if (count > wanted) count = (cl_uint)wanted;
  clEnqueueAllReduceBuffer_fn all_reduce =
      (clEnqueueAllReduceBuffer_fn)clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueAllReduceBuffer");
  if (!all_reduce) {
    fprintf(stderr, "allreduce_training: the platform has no clEnqueueAllReduceBuffer (run it through fedcl)\n");
    return 2;
  }
  cl_int err;
  cl_context context = clCreateContext(NULL, count, devices, NULL, NULL, &err);
  EXAMPLE_CHECK(err);
  cl_program program = example_build_for(context, count, devices, kSource);
  printf("devices %u\nparameters %zu\ngradient_mib %.0f\n", count, p, p * 4.0 / (1 << 20));

  /* The data: shard d on device d; the whole batch for the single-device run. */
  size_t bytes = p * sizeof(float);
  float *x = malloc(count * bytes), *t = malloc(count * bytes), *w = calloc(p, sizeof(float));
  if (!x || !t || !w) return 2;
  for (size_t d = 0; d < count; d++)
    for (size_t j = 0; j < p; j++) {
      x[d * p + j] = feature(d, j);
      t[d * p + j] = target(d, j);
    }

  cl_command_queue queues[kMaxDevices];
  cl_mem weights[kMaxDevices], xs[kMaxDevices], ts[kMaxDevices], grads[kMaxDevices];
  cl_kernel gradient[kMaxDevices], update[kMaxDevices];
  float scale = kRate / (float)count;
  for (cl_uint d = 0; d < count; d++) {
    queues[d] = clCreateCommandQueueWithProperties(context, devices[d], NULL, &err);
    EXAMPLE_CHECK(err);
    weights[d] = buffer(context, bytes, w);
    xs[d] = buffer(context, bytes, x + d * p);
    ts[d] = buffer(context, bytes, t + d * p);
    grads[d] = buffer(context, bytes, NULL);
    gradient[d] = clCreateKernel(program, "gradient", &err);
    EXAMPLE_CHECK(err);
    update[d] = clCreateKernel(program, "update", &err);
    EXAMPLE_CHECK(err);
    cl_mem args[] = {weights[d], xs[d], ts[d], grads[d]};
    for (cl_uint a = 0; a < 4; a++) EXAMPLE_CHECK(clSetKernelArg(gradient[d], a, sizeof(cl_mem), &args[a]));
    EXAMPLE_CHECK(clSetKernelArg(update[d], 0, sizeof(cl_mem), &weights[d]));
    EXAMPLE_CHECK(clSetKernelArg(update[d], 1, sizeof(cl_mem), &grads[d]));
    EXAMPLE_CHECK(clSetKernelArg(update[d], 2, sizeof scale, &scale));
  }
  /* Data parallel: gradients, one all-reduce, updates; each queue in order. */
  double start = example_now();
  for (size_t s = 0; s < steps; s++) {
    for (cl_uint d = 0; d < count; d++) run(queues[d], gradient[d], p);
    EXAMPLE_CHECK(all_reduce(count, queues, grads, NULL, grads, NULL, bytes, CL_FEDCL_REDUCE_SUM, CL_FEDCL_FLOAT, 0, NULL,
                             NULL));
    for (cl_uint d = 0; d < count; d++) run(queues[d], update[d], p);
  }
  for (cl_uint d = 0; d < count; d++) EXAMPLE_CHECK(clFinish(queues[d]));
  double split = (example_now() - start) / (double)steps;

  /* The same steps on the first device, over the whole batch. */
  cl_mem one_w = buffer(context, bytes, w), one_x = buffer(context, count * bytes, x),
         one_t = buffer(context, count * bytes, t), one_g = buffer(context, bytes, NULL);
  cl_kernel all = clCreateKernel(program, "gradient_all", &err);
  EXAMPLE_CHECK(err);
  cl_ulong p64 = p;
  cl_mem all_args[] = {one_w, one_x, one_t, one_g};
  for (cl_uint a = 0; a < 4; a++) EXAMPLE_CHECK(clSetKernelArg(all, a, sizeof(cl_mem), &all_args[a]));
  EXAMPLE_CHECK(clSetKernelArg(all, 4, sizeof count, &count));
  EXAMPLE_CHECK(clSetKernelArg(all, 5, sizeof p64, &p64));
  EXAMPLE_CHECK(clSetKernelArg(update[0], 0, sizeof(cl_mem), &one_w));
  EXAMPLE_CHECK(clSetKernelArg(update[0], 1, sizeof(cl_mem), &one_g));
  start = example_now();
  for (size_t s = 0; s < steps; s++) {
    run(queues[0], all, p);
    run(queues[0], update[0], p);
  }
  EXAMPLE_CHECK(clFinish(queues[0]));
  double single = (example_now() - start) / (double)steps;

  float *expected = malloc(bytes), *got = malloc(bytes), *first = malloc(bytes);
  if (!expected || !got || !first) return 2;
  EXAMPLE_CHECK(clEnqueueReadBuffer(queues[0], one_w, CL_TRUE, 0, bytes, expected, 0, NULL, NULL));
  double worst = 0;
  size_t differing = 0;
  for (cl_uint d = 0; d < count; d++) {
    EXAMPLE_CHECK(clEnqueueReadBuffer(queues[d], weights[d], CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    if (d == 0) memcpy(first, got, bytes);
    else if (memcmp(first, got, bytes)) differing++;
    for (size_t j = 0; j < p; j++) {
      double error = fabs((double)got[j] - expected[j]) / fmax(fabs((double)expected[j]), 1e-6);
      if (error > worst) worst = error;
    }
  }
  printf("seconds_per_step_split %.4f\nseconds_per_step_one_device %.4f\nmax_rel_error %.2e\n", split, single, worst);
  printf("devices_differing_from_the_first %zu\n", differing);
  int ok = worst <= 1e-5 && differing == 0;
  printf("result %s\n", ok ? "ok" : "mismatch");
  return ok ? 0 : 1;
}

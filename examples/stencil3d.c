/* A 3D Jacobi stencil split over several devices the way users split grids, with nothing but plain
   OpenCL: two parent buffers hold the whole grid (NX x NY x NZ floats) and the iterations ping-pong
   between them. The grid is cut along z into one slab per device. In each iteration a slab's kernel
   reads a sub-buffer of the source grid covering its planes plus one halo plane on each side that
   has a neighbour, and writes the sub-buffer of its own planes in the destination grid:
       out = (c + its six neighbours) / 7     (the faces of the grid stay as they are)
   It waits for the events of its neighbours' and its own previous iteration and nothing else: no
   copy, no migration. Through fedcl the devices may sit on different nodes; coherence by byte
   range then moves only the halo planes between their daemons.
   Then the same iterations run on the first device alone, unsplit, and both grids must be the same
   bits (every cell adds in the same order either way). Prints, for both, the first iteration's
   seconds (through fedcl it also brings each device its slab: the grid starts where it was created)
   and the seconds per iteration after it, which the speedup compares: what a long run sees.
   Usage: stencil3d [-n N | -x NX -y NY -z NZ] [-i ITERATIONS (2 or more)] [-d DEVICES]
   (default 256^3 = 64 MiB per grid, 20 iterations, every device of the platform) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

static const char kSource[] =
    "/* in: planes [in_z0, in_z0 + in_planes) of the grid; out: planes [z0, z1). */\n"
    "__kernel void jacobi(__global const float *in, __global float *out, uint nx, uint ny, uint nz,\n"
    "                     uint in_z0, uint z0) {\n"
    "  uint x = get_global_id(0), y = get_global_id(1), z = z0 + get_global_id(2);\n"
    "  size_t plane = (size_t)nx * ny, at = (size_t)(z - in_z0) * plane + (size_t)y * nx + x;\n"
    "  float c = in[at];\n"
    "  float v = c;\n"
    "  if (x > 0 && y > 0 && z > 0 && x + 1 < nx && y + 1 < ny && z + 1 < nz)\n"
    "    v = (c + in[at - 1] + in[at + 1] + in[at - nx] + in[at + nx] + in[at - plane] + in[at + plane]) / 7.0f;\n"
    "  out[(size_t)(z - z0) * plane + (size_t)y * nx + x] = v;\n"
    "}\n";

enum { kMaxDevices = 64 };

static unsigned long option(const char *text, unsigned long min, unsigned long max) {
  char *end;
  unsigned long value = text ? strtoul(text, &end, 10) : 0;
  if (!text || *end || value < min || value > max) {
    fprintf(stderr, "usage: stencil3d [-n N | -x NX -y NY (3..4096) -z NZ (3..1048576)] [-i ITERATIONS (2..100000)] "
                    "[-d DEVICES]\n");
    exit(2);
  }
  return value;
}

typedef struct {
  cl_uint nx, ny, nz, slabs;
  size_t plane_bytes;
  cl_mem grid[2];
  cl_command_queue *queues;  /* one per slab */
  cl_kernel *kernels;        /* one per slab */
} Split;

static cl_mem sub_buffer(cl_mem parent, size_t origin, size_t size) {
  cl_buffer_region region = {origin, size};
  cl_int err;
  cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  EXAMPLE_CHECK(err);
  return sub;
}

typedef struct {
  double first, after;  /* seconds: the first iteration, and per iteration after it */
} Timing;

/* Runs the iterations with the grid cut into s.slabs slabs along z. The result is in
   grid[iterations % 2]. */
static Timing iterate(Split *s, unsigned iterations) {
  cl_uint n = s->slabs;
  cl_event *previous = calloc(n, sizeof(cl_event)), *current = calloc(n, sizeof(cl_event));
  cl_mem *subs = calloc(4 * n, sizeof(cl_mem));  /* per slab: input and output of each direction */
  if (!previous || !current || !subs) exit(2);
  for (cl_uint k = 0; k < n; k++) {
    cl_uint z0 = s->nz * k / n, z1 = s->nz * (k + 1) / n;
    cl_uint in_z0 = z0 > 0 ? z0 - 1 : 0, in_z1 = z1 < s->nz ? z1 + 1 : z1;
    for (int g = 0; g < 2; g++) {
      subs[4 * k + 2 * g] = sub_buffer(s->grid[g], in_z0 * s->plane_bytes, (in_z1 - in_z0) * s->plane_bytes);
      subs[4 * k + 2 * g + 1] = sub_buffer(s->grid[g], z0 * s->plane_bytes, (z1 - z0) * s->plane_bytes);
    }
    cl_uint args[] = {s->nx, s->ny, s->nz, in_z0, z0};
    for (cl_uint a = 0; a < 5; a++) EXAMPLE_CHECK(clSetKernelArg(s->kernels[k], 2 + a, sizeof(cl_uint), &args[a]));
  }
  double start = example_now(), first_done = start;
  for (unsigned t = 0; t < iterations; t++) {
    if (t == 1) {
      EXAMPLE_CHECK(clWaitForEvents(n, previous));
      first_done = example_now();
    }
    int from = t % 2;
    for (cl_uint k = 0; k < n; k++) {
      cl_uint z0 = s->nz * k / n, z1 = s->nz * (k + 1) / n;
      cl_event waits[3];
      cl_uint count = 0;
      for (cl_uint j = k > 0 ? k - 1 : 0; t > 0 && j <= k + 1 && j < n; j++) waits[count++] = previous[j];
      EXAMPLE_CHECK(clSetKernelArg(s->kernels[k], 0, sizeof(cl_mem), &subs[4 * k + 2 * from]));
      EXAMPLE_CHECK(clSetKernelArg(s->kernels[k], 1, sizeof(cl_mem), &subs[4 * k + 2 * (1 - from) + 1]));
      size_t global[3] = {s->nx, s->ny, z1 - z0};
      EXAMPLE_CHECK(clEnqueueNDRangeKernel(s->queues[k], s->kernels[k], 3, NULL, global, NULL, count,
                                           count ? waits : NULL, &current[k]));
    }
    for (cl_uint k = 0; k < n; k++) {
      if (previous[k]) clReleaseEvent(previous[k]);
      previous[k] = current[k];
      EXAMPLE_CHECK(clFlush(s->queues[k]));
    }
  }
  EXAMPLE_CHECK(clWaitForEvents(n, previous));
  Timing timing = {first_done - start, (example_now() - first_done) / (iterations - 1)};
  for (cl_uint k = 0; k < n; k++) clReleaseEvent(previous[k]);
  for (cl_uint k = 0; k < 4 * n; k++) clReleaseMemObject(subs[k]);
  free(previous);
  free(current);
  free(subs);
  return timing;
}

int main(int argc, char **argv) {
  cl_uint nx = 256, ny = 256, nz = 256, wanted = kMaxDevices;
  unsigned iterations = 20;
  for (int i = 1; i < argc; i++) {
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "-n")) nx = ny = nz = (cl_uint)option(value, 3, 4096);
    else if (!strcmp(argv[i], "-x")) nx = (cl_uint)option(value, 3, 4096);
    else if (!strcmp(argv[i], "-y")) ny = (cl_uint)option(value, 3, 4096);
    else if (!strcmp(argv[i], "-z")) nz = (cl_uint)option(value, 3, 1048576);
    else if (!strcmp(argv[i], "-i")) iterations = (unsigned)option(value, 2, 100000);
    else if (!strcmp(argv[i], "-d")) wanted = (cl_uint)option(value, 1, kMaxDevices);
    else option(NULL, 0, 0);
    i++;
  }
  cl_platform_id platform = example_pick_platform();
  cl_device_id devices[kMaxDevices];
  cl_uint count = example_devices(platform, devices, kMaxDevices);
  if (count > wanted) count = wanted;
  if (count > nz / 2) count = nz / 2;
  /* Sub-buffers start at plane boundaries: a plane must be a multiple of every device's alignment. */
  size_t plane_bytes = (size_t)nx * ny * sizeof(float), bytes = plane_bytes * nz;
  for (cl_uint d = 0; d < count; d++) {
    cl_uint align_bits = 0;
    EXAMPLE_CHECK(clGetDeviceInfo(devices[d], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    if (plane_bytes % (align_bits / 8)) {
      fprintf(stderr, "stencil3d: a plane of %zu bytes is not a multiple of device %u's alignment (%u bytes)\n",
              plane_bytes, d, align_bits / 8);
      return 2;
    }
  }
  cl_int err;
  cl_context context = clCreateContext(NULL, count, devices, NULL, NULL, &err);
  EXAMPLE_CHECK(err);
  cl_program program = example_build_for(context, count, devices, kSource);
  printf("grid %ux%ux%u\ndevices %u\ngrid_mib %.0f\niterations %u\n", nx, ny, nz, count, bytes / 1048576.0, iterations);

  float *initial = malloc(bytes), *split_result = malloc(bytes), *one_result = malloc(bytes);
  if (!initial || !split_result || !one_result) return 2;
  for (size_t i = 0; i < bytes / sizeof(float); i++) initial[i] = (float)((i * 2654435761u) % 1000) / 8.0f;

  cl_command_queue queues[kMaxDevices];
  cl_kernel kernels[kMaxDevices];
  for (cl_uint d = 0; d < count; d++) {
    queues[d] = clCreateCommandQueueWithProperties(context, devices[d], NULL, &err);
    EXAMPLE_CHECK(err);
    kernels[d] = clCreateKernel(program, "jacobi", &err);
    EXAMPLE_CHECK(err);
  }
  Timing timing[2];
  float *results[2] = {split_result, one_result};
  for (int run = 0; run < 2; run++) {  /* split over every device, then the first device alone */
    Split s = {nx, ny, nz, run == 0 ? count : 1, plane_bytes, {NULL, NULL}, queues, kernels};
    for (int g = 0; g < 2; g++) {
      s.grid[g] = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, initial, &err);
      EXAMPLE_CHECK(err);
    }
    timing[run] = iterate(&s, iterations);
    EXAMPLE_CHECK(clEnqueueReadBuffer(queues[0], s.grid[iterations % 2], CL_TRUE, 0, bytes, results[run], 0, NULL, NULL));
    for (int g = 0; g < 2; g++) clReleaseMemObject(s.grid[g]);
  }
  size_t mismatches = 0;
  for (size_t i = 0; i < bytes / sizeof(float); i++) mismatches += memcmp(&split_result[i], &one_result[i], sizeof(float)) != 0;
  printf("seconds_first_iteration_split %.5f\nseconds_first_iteration_one_device %.5f\n", timing[0].first, timing[1].first);
  printf("seconds_per_iteration_split %.5f\nseconds_per_iteration_one_device %.5f\nspeedup %.2f\nmismatches %zu\n",
         timing[0].after, timing[1].after, timing[1].after / timing[0].after, mismatches);
  printf("result %s\n", mismatches ? "mismatch" : "ok");
  return mismatches ? 1 : 0;
}

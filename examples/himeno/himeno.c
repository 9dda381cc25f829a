/* What the three versions share: the grid, the kernel, the run and its result. Usage:
 *   himeno_VERSION [-i I] [-j J] [-k K] [-n iterations]
 * Prints the residual, a checksum of the grid that does not depend on how it was split, and the
 * time per iteration (rank 0, the slowest rank's). */
#include "himeno.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../example.h"

static const char *kSource =
    "kernel void jacobi(global const float *p, global const float *below, global const float *above,\n"
    "                   global float *q, global float *gosa, uint slot, uint first, uint last, uint stride,\n"
    "                   uint n, uint J, uint K, float omega) {\n"
    "  size_t j = get_global_id(0) + 1, k = get_global_id(1) + 1, plane = (size_t)J * K, jk = j * K + k;\n"
    "  float sum = 0.0f;\n"
    "  for (size_t i = first; i <= last; i += stride) {\n"
    "    size_t c = i * plane + jk;\n"
    "    float down = i == 1 ? below[jk] : p[c - plane], up = i == n ? above[jk] : p[c + plane];\n"
    "    float s0 = up + p[c + K] + p[c + 1] + down + p[c - K] + p[c - 1];\n"
    "    float ss = s0 * (1.0f / 6.0f) - p[c];\n"
    "    sum += ss * ss;\n"
    "    q[c] = p[c] + omega * ss;\n"
    "  }\n"
    "  gosa[slot * plane + j * K + k] = sum;\n"
    "}\n";

size_t himeno_plane(const struct himeno *h, size_t i) { return i * h->plane_bytes; }

void himeno_update(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, unsigned slot,
                   size_t first, size_t last, size_t stride, cl_uint num_events, const cl_event *wait_list,
                   cl_event *event) {
  if (first > last) {
    if (event) EXAMPLE_CHECK(clEnqueueMarkerWithWaitList(queue, num_events, wait_list, event));
    return;
  }
  cl_mem buffers[] = {p_old, h->below, h->above, p_new, h->gosa};
  cl_uint args[] = {slot, (cl_uint)first, (cl_uint)last, (cl_uint)stride, (cl_uint)h->planes, h->J, h->K};
  float omega = 0.8f;
  for (int a = 0; a < 5; a++) EXAMPLE_CHECK(clSetKernelArg(h->jacobi, a, sizeof buffers[a], &buffers[a]));
  for (int a = 0; a < 7; a++) EXAMPLE_CHECK(clSetKernelArg(h->jacobi, 5 + a, sizeof args[a], &args[a]));
  EXAMPLE_CHECK(clSetKernelArg(h->jacobi, 12, sizeof omega, &omega));
  size_t global[2] = {h->J - 2, h->K - 2};
  EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, h->jacobi, 2, NULL, global, NULL, num_events, wait_list, event));
}

void himeno_interior(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, cl_uint num_events,
                     const cl_event *wait_list, cl_event *event) {
  himeno_update(h, queue, p_old, p_new, 0, 2, h->planes - 1, 1, num_events, wait_list, event);
}

void himeno_edges(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, cl_uint num_events,
                  const cl_event *wait_list, cl_event *event) {
  size_t stride = h->planes > 1 ? h->planes - 1 : 1;
  himeno_update(h, queue, p_old, p_new, 1, 1, h->planes, stride, num_events, wait_list, event);
}

/* Himeno's initial pressure: (i / (I - 1))^2 over the global plane index i. */
static void fill_initial(float *grid, size_t first_global, size_t planes, unsigned I, size_t plane_floats) {
  for (size_t i = 0; i < planes; i++) {
    double g = (double)(first_global + i) / (double)(I - 1);
    for (size_t c = 0; c < plane_floats; c++) grid[i * plane_floats + c] = (float)(g * g);
  }
}

/* Sums bits(p) * (global position + 1) over the rank's planes: exact, and the same however the grid
 * is split, so that the versions can be compared bit for bit. */
static uint64_t checksum(const float *grid, size_t first_global, size_t planes, size_t plane_floats) {
  uint64_t sum = 0;
  for (size_t i = 0; i < planes; i++)
    for (size_t c = 0; c < plane_floats; c++) {
      uint32_t bits;
      memcpy(&bits, &grid[(i + 1) * plane_floats + c], sizeof bits);
      sum += (uint64_t)bits * ((first_global + i) * plane_floats + c + 1);
    }
  return sum;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  unsigned I = 65, J = 33, K = 33;
  int iterations = 20, opt;
  while ((opt = getopt(argc, argv, "i:j:k:n:")) != -1) {
    if (opt == 'i') I = (unsigned)atoi(optarg);
    else if (opt == 'j') J = (unsigned)atoi(optarg);
    else if (opt == 'k') K = (unsigned)atoi(optarg);
    else if (opt == 'n') iterations = atoi(optarg);
    else return fprintf(stderr, "usage: %s [-i I] [-j J] [-k K] [-n iterations]\n", argv[0]), 2;
  }
  struct himeno h = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &h.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &h.ranks);
  if (!himeno_distributed && h.ranks > 1) return fprintf(stderr, "the serial version runs on one rank\n"), 2;
  /* Planes 1 .. I-2 are updated; 0 and I-1 are the fixed boundary, which the end ranks hold as halos. */
  size_t updated = I - 2, first = 1 + updated * (size_t)h.rank / (size_t)h.ranks;
  h.planes = 1 + updated * (size_t)(h.rank + 1) / (size_t)h.ranks - first;
  if (I < 3 || J < 3 || K < 3 || h.planes < 1) return fprintf(stderr, "the grid is too small for %d ranks\n", h.ranks), 2;
  h.down = h.rank > 0 ? h.rank - 1 : MPI_PROC_NULL;
  h.up = h.rank + 1 < h.ranks ? h.rank + 1 : MPI_PROC_NULL;
  h.J = J;
  h.K = K;
  h.plane_bytes = (size_t)J * K * sizeof(float);

  cl_device_id device;
  example_pick_device(&h.platform, &device);
  h.device = device;
  cl_int err;
  h.context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  EXAMPLE_CHECK(err);
  h.q1 = clCreateCommandQueue(h.context, device, 0, &err);
  EXAMPLE_CHECK(err);
  h.q2 = clCreateCommandQueue(h.context, device, 0, &err);
  EXAMPLE_CHECK(err);
  h.jacobi = clCreateKernel(example_build(h.context, device, kSource), "jacobi", &err);
  EXAMPLE_CHECK(err);

  size_t plane_floats = (size_t)J * K, bytes = (h.planes + 2) * h.plane_bytes;
  float *grid = malloc(bytes), *zeros = calloc(2 * plane_floats, sizeof(float));
  fill_initial(grid, first - 1, h.planes + 2, I, plane_floats);
  for (int b = 0; b < 2; b++) {
    h.p[b] = clCreateBuffer(h.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, grid, &err);
    EXAMPLE_CHECK(err);
  }
  h.gosa = clCreateBuffer(h.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 2 * h.plane_bytes, zeros, &err);
  EXAMPLE_CHECK(err);
  h.below = clCreateBuffer(h.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, h.plane_bytes, grid, &err);
  EXAMPLE_CHECK(err);
  h.above = clCreateBuffer(h.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, h.plane_bytes,
                           grid + (h.planes + 1) * plane_floats, &err);
  EXAMPLE_CHECK(err);

  himeno_iterate(&h, 0, 1);  /* warm-up: builds, first transfers */
  MPI_Barrier(MPI_COMM_WORLD);
  double start = example_now();
  himeno_iterate(&h, 1, iterations - 1);
  double mine = (example_now() - start) / (iterations > 1 ? iterations - 1 : 1), slowest;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  EXAMPLE_CHECK(clEnqueueReadBuffer(h.q1, h.p[iterations % 2], CL_TRUE, 0, bytes, grid, 0, NULL, NULL));
  EXAMPLE_CHECK(clEnqueueReadBuffer(h.q1, h.gosa, CL_TRUE, 0, 2 * h.plane_bytes, zeros, 0, NULL, NULL));
  double gosa = 0, total_gosa;
  for (size_t c = 0; c < 2 * plane_floats; c++) gosa += zeros[c];
  unsigned long long sum = checksum(grid, first, h.planes, plane_floats), total_sum;
  MPI_Reduce(&gosa, &total_gosa, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&sum, &total_sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (h.rank == 0)
    printf("himeno %s: %ux%ux%u, %d iterations, %d rank(s): gosa %.6e checksum %016llx, %.3f ms per iteration\n",
           himeno_version, I, J, K, iterations, h.ranks, total_gosa, total_sum, slowest * 1e3);
  free(grid);
  free(zeros);
  MPI_Finalize();
  return 0;
}

/* The clDataTransfer paper's Listing 3: rank 0's device sends a buffer to rank 1's device, and no
 * MPI call of the program moves the data. Run with two ranks, each rank's fedcl on a daemon of its
 * own (mpirun -np 2; FEDCL_HOSTS per rank):
 *   rank 0 fills the buffer with a kernel and sends it (clEnqueueSendBuffer);
 *   rank 1 receives it (clEnqueueRecvBuffer), adds 1 with a kernel and checks every word.
 * Usage: mpi_device_to_device [MiB] (default 64). */
#include <CL/cl_fedcl_mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "example.h"

static const char *kSource =
    "kernel void fill(global uint *x) { x[get_global_id(0)] = (uint)get_global_id(0) * 7u; }\n"
    "kernel void add_one(global uint *x) { x[get_global_id(0)] += 1u; }\n";

int main(int argc, char **argv) {
  int provided, rank, ranks;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) return fprintf(stderr, "run with two ranks\n"), 2;
  size_t words = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 18, bytes = words * 4;

  cl_platform_id platform;
  cl_device_id device;
  example_pick_device(&platform, &device);
  cl_int err;
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  EXAMPLE_CHECK(err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  EXAMPLE_CHECK(err);
  cl_program program = example_build(context, device, kSource);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  EXAMPLE_CHECK(err);
  clEnqueueSendBuffer_fn send = (clEnqueueSendBuffer_fn)clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueSendBuffer");
  clEnqueueRecvBuffer_fn recv = (clEnqueueRecvBuffer_fn)clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueRecvBuffer");
  if (!send || !recv) return fprintf(stderr, "this platform has no MPI commands (cl_fedcl_transfer)\n"), 1;

  cl_kernel kernel = clCreateKernel(program, rank == 0 ? "fill" : "add_one", &err);
  EXAMPLE_CHECK(err);
  EXAMPLE_CHECK(clSetKernelArg(kernel, 0, sizeof buffer, &buffer));
  double start = example_now();
  if (rank == 0) {
    EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &words, NULL, 0, NULL, NULL));
    EXAMPLE_CHECK(send(queue, buffer, CL_TRUE, 0, bytes, 1, 0, MPI_COMM_WORLD, 0, NULL, NULL));
  } else {
    EXAMPLE_CHECK(recv(queue, buffer, CL_TRUE, 0, bytes, 0, 0, MPI_COMM_WORLD, 0, NULL, NULL));
    double seconds = example_now() - start;
    EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &words, NULL, 0, NULL, NULL));
    unsigned *host = malloc(bytes);
    EXAMPLE_CHECK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    size_t wrong = 0;
    for (size_t i = 0; i < words; i++) wrong += host[i] != (unsigned)i * 7u + 1u;
    printf("rank 1 received %zu MiB from rank 0's device in %.3f s: %s\n", bytes >> 20, seconds,
           wrong ? "WRONG" : "every word right");
    free(host);
    if (wrong) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}

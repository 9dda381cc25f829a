/* c = a + b on an OpenCL device, checked against the CPU. Prints PASS or FAIL.
   Usage: vector_add [N]     (FEDCL_EXAMPLE_PLATFORM=fedcl picks fedcl's platform) */
#include <stdio.h>
#include <stdlib.h>

#include "example.h"

static const char kSource[] =
    "__kernel void vector_add(__global const float *a, __global const float *b,\n"
    "                         __global float *c, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

int main(int argc, char **argv) {
  cl_uint n = argc > 1 ? (cl_uint)strtoul(argv[1], NULL, 10) : 1u << 20;
  if (n == 0) {
    fprintf(stderr, "usage: vector_add [N > 0]\n");
    return 2;
  }
  size_t bytes = (size_t)n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  if (!a || !b || !c) {
    fprintf(stderr, "out of memory for %u elements\n", n);
    return 1;
  }
  for (cl_uint i = 0; i < n; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = (float)(n - i) * 0.25f;
  }

  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  example_open(&device, &context, &queue);
  cl_int status;
  cl_program program = example_build(context, device, kSource);
  cl_kernel kernel = clCreateKernel(program, "vector_add", &status);
  EXAMPLE_CHECK(status);

  cl_mem a_buffer = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, a, &status);
  EXAMPLE_CHECK(status);
  cl_mem b_buffer = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, b, &status);
  EXAMPLE_CHECK(status);
  cl_mem c_buffer = clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, NULL, &status);
  EXAMPLE_CHECK(status);
  EXAMPLE_CHECK(clSetKernelArg(kernel, 0, sizeof a_buffer, &a_buffer));
  EXAMPLE_CHECK(clSetKernelArg(kernel, 1, sizeof b_buffer, &b_buffer));
  EXAMPLE_CHECK(clSetKernelArg(kernel, 2, sizeof c_buffer, &c_buffer));
  EXAMPLE_CHECK(clSetKernelArg(kernel, 3, sizeof n, &n));
  size_t global = n;
  EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
  EXAMPLE_CHECK(clEnqueueReadBuffer(queue, c_buffer, CL_TRUE, 0, bytes, c, 0, NULL, NULL));

  cl_uint wrong = 0;
  for (cl_uint i = 0; i < n; i++) {
    if (c[i] == a[i] + b[i]) continue;
    if (wrong++ < 5) fprintf(stderr, "c[%u] = %g, expected %g\n", i, c[i], a[i] + b[i]);
  }
  printf("%s: %u of %u elements wrong\n", wrong ? "FAIL" : "PASS", wrong, n);

  clReleaseMemObject(a_buffer);
  clReleaseMemObject(b_buffer);
  clReleaseMemObject(c_buffer);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(a);
  free(b);
  free(c);
  return wrong ? 1 : 0;
}

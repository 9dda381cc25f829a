/* Streams a large file through a device and writes the result file: chunk by chunk, the next chunk
   loads while the current one is processed and the previous one is saved, all ordered by events.
   With fedcl's transfer engine (cl_fedcl_transfer) the loads and saves are queue commands
   (clEnqueueWriteBufferFromStdioFile, clEnqueueReadBufferToStdioFile) and no host thread waits
   between them; on a platform without it, the program reads and writes the files itself. Either way
   the result file is checked against the CPU. Prints PASS or FAIL and a checksum.
   Usage: file_stream [MiB] [CHUNK_MiB]   (FEDCL_EXAMPLE_PLATFORM=fedcl picks fedcl's platform) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl_fedcl_transfer.h>

#include "example.h"

static const char kSource[] =
    "__kernel void transform(__global uint *x) {\n"
    "  size_t i = get_global_id(0);\n"
    "  x[i] = x[i] * 2654435761u + (x[i] >> 7);\n"
    "}\n";

static cl_uint transform(cl_uint x) { return x * 2654435761u + (x >> 7); }
static cl_uint input_word(size_t i) { return (cl_uint)(i * 40503u) ^ (cl_uint)(i >> 9); }

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, chunk_mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
  if (mib == 0 || chunk_mib == 0) {
    fprintf(stderr, "usage: file_stream [MiB > 0] [CHUNK_MiB > 0]\n");
    return 2;
  }
  size_t total = mib << 20, chunk = chunk_mib << 20;
  char in_path[64], out_path[64];
  snprintf(in_path, sizeof in_path, "/tmp/file_stream_in.%d", (int)getpid());
  snprintf(out_path, sizeof out_path, "/tmp/file_stream_out.%d", (int)getpid());

  /* The input file. */
  FILE *in = fopen(in_path, "wb");
  if (!in) return perror(in_path), 1;
  for (size_t i = 0; i < total / 4; i++) {
    cl_uint word = input_word(i);
    fwrite(&word, 4, 1, in);
  }
  fclose(in);

  cl_platform_id platform;
  cl_device_id device;
  example_pick_device(&platform, &device);
  cl_int status;
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
  EXAMPLE_CHECK(status);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &status);
  EXAMPLE_CHECK(status);
  cl_program program = example_build(context, device, kSource);
  cl_kernel kernel = clCreateKernel(program, "transform", &status);
  EXAMPLE_CHECK(status);
  clEnqueueWriteBufferFromStdioFile_fn load = (clEnqueueWriteBufferFromStdioFile_fn)
      clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueWriteBufferFromStdioFile");
  clEnqueueReadBufferToStdioFile_fn save = (clEnqueueReadBufferToStdioFile_fn)
      clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueReadBufferToStdioFile");
  int engine = load && save;
  printf("streaming %zu MiB in %zu MiB chunks %s\n", mib, chunk_mib,
         engine ? "with the transfer engine's file commands" : "with fread/fwrite on the host");

  /* Two device buffers take turns; an in-order queue orders load, kernel and save of each chunk. */
  cl_mem buffers[2];
  for (int b = 0; b < 2; b++) {
    buffers[b] = clCreateBuffer(context, CL_MEM_READ_WRITE, chunk, NULL, &status);
    EXAMPLE_CHECK(status);
  }
  in = fopen(in_path, "rb");
  FILE *out = fopen(out_path, "wb");
  if (!in || !out) return perror("fopen"), 1;
  void *host = engine ? NULL : malloc(chunk);
  double start = example_now();
  for (size_t at = 0, k = 0; at < total; at += chunk, k++) {
    size_t bytes = total - at < chunk ? total - at : chunk;
    cl_mem buffer = buffers[k % 2];
    if (engine) {
      EXAMPLE_CHECK(load(queue, buffer, CL_FALSE, 0, bytes, in, 0, NULL, NULL));
    } else {
      if (fread(host, 1, bytes, in) != bytes) return fprintf(stderr, "short read\n"), 1;
      EXAMPLE_CHECK(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    }
    EXAMPLE_CHECK(clSetKernelArg(kernel, 0, sizeof buffer, &buffer));
    size_t global = bytes / 4;
    EXAMPLE_CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
    if (engine) {
      EXAMPLE_CHECK(save(queue, buffer, CL_FALSE, 0, bytes, out, 0, NULL, NULL));
    } else {
      EXAMPLE_CHECK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
      fwrite(host, 1, bytes, out);
    }
  }
  EXAMPLE_CHECK(clFinish(queue));
  double seconds = example_now() - start;
  fclose(in);
  fclose(out);

  /* The result file against the CPU. */
  out = fopen(out_path, "rb");
  size_t wrong = 0, words = 0;
  uint64_t checksum = 0;
  cl_uint word;
  while (fread(&word, 4, 1, out) == 1) {
    cl_uint want = transform(input_word(words));
    if (word != want && wrong++ < 5) fprintf(stderr, "word %zu = %u, expected %u\n", words, word, want);
    checksum = checksum * 1099511628211u + word;
    words++;
  }
  fclose(out);
  if (words != total / 4) {
    fprintf(stderr, "the result file has %zu words, not %zu\n", words, total / 4);
    wrong++;
  }
  remove(in_path);
  remove(out_path);
  printf("%s: %zu of %zu words wrong, checksum %016llx, %.1f MiB/s\n", wrong ? "FAIL" : "PASS", wrong, total / 4,
         (unsigned long long)checksum, mib / seconds);
  free(host);
  return wrong ? 1 : 0;
}

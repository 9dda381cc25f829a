/* A Himeno-style Jacobi solver for Poisson's equation on an I x J x K grid, split along i across MPI
 * ranks, as the clDataTransfer paper runs it: every iteration updates each rank's planes from its
 * own and its neighbours' edge planes (the halos). Three versions of the iteration loop share this
 * set-up: himeno_serial.c (one process, the whole grid), himeno_overlap.c (the paper's Listing 2:
 * two queues and MPI by hand) and himeno_extension.c (Listing 4: fedcl's MPI commands). */
#ifndef HIMENO_H
#define HIMENO_H

#include <CL/cl.h>
#include <mpi.h>

struct himeno {
  int rank, ranks, down, up;   /* neighbours along i; MPI_PROC_NULL at the grid's ends */
  size_t planes;               /* this rank's planes (n); the buffers hold n + 2, halos included */
  size_t plane_bytes;          /* J * K floats */
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue q1, q2;
  cl_kernel jacobi;
  cl_mem p[2];                 /* p[t % 2] is read at iteration t, p[(t + 1) % 2] written */
  cl_mem below, above;         /* the halos: the neighbours' edge planes (or the grid's boundary).
                                  Buffers of their own, so that receiving them never writes a buffer
                                  that a kernel on another queue is using (OpenCL leaves that
                                  undefined) */
  cl_mem gosa;                 /* the residual of the last iteration, per (j, k), two slots */
  unsigned J, K;
};

/* Byte offset of plane i (1 .. n; 0 and n + 1 hold the initial halos, which no kernel reads) in p. */
size_t himeno_plane(const struct himeno *h, size_t i);

/* The update of planes first, first + stride, ... up to last of p_old into p_new, on queue, writing
 * its residual into gosa slot `slot`. Nothing is enqueued when first > last. */
void himeno_update(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, unsigned slot,
                   size_t first, size_t last, size_t stride, cl_uint num_events, const cl_event *wait_list,
                   cl_event *event);
/* Planes 2 .. n-1, which need no halo, and planes 1 and n, which do. */
void himeno_interior(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, cl_uint num_events,
                     const cl_event *wait_list, cl_event *event);
void himeno_edges(struct himeno *h, cl_command_queue queue, cl_mem p_old, cl_mem p_new, cl_uint num_events,
                  const cl_event *wait_list, cl_event *event);

/* The version's loop: iterations first .. first + count - 1, every command complete on return. */
void himeno_iterate(struct himeno *h, int first, int count);
/* Its name, and whether it splits the grid across ranks (the serial one runs on one). */
extern const char *const himeno_version;
extern const int himeno_distributed;

#endif

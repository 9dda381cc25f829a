/* Hand-overlapped (the paper's Listing 2): the interior planes are computed on one queue while the
 * host exchanges the edge planes with MPI through host memory on the other; the edge planes follow
 * once their halos are in. The host waits for the device twice per iteration. */
#include <stdlib.h>

#include "himeno.h"

const char *const himeno_version = "hand-overlapped";
const int himeno_distributed = 1;

void himeno_iterate(struct himeno *h, int first, int count) {
  size_t n = h->planes, bytes = h->plane_bytes;
  int floats = (int)(bytes / sizeof(float));
  float *to_down = malloc(bytes), *to_up = malloc(bytes), *from_down = malloc(bytes), *from_up = malloc(bytes);
  for (int t = first; t < first + count; t++) {
    cl_mem p_old = h->p[t % 2], p_new = h->p[(t + 1) % 2];
    himeno_interior(h, h->q1, p_old, p_new, 0, NULL, NULL);
    clEnqueueReadBuffer(h->q2, p_old, CL_FALSE, himeno_plane(h, 1), bytes, to_down, 0, NULL, NULL);
    clEnqueueReadBuffer(h->q2, p_old, CL_FALSE, himeno_plane(h, n), bytes, to_up, 0, NULL, NULL);
    clFinish(h->q2);
    MPI_Request requests[4];
    MPI_Irecv(from_down, floats, MPI_FLOAT, h->down, 0, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(from_up, floats, MPI_FLOAT, h->up, 1, MPI_COMM_WORLD, &requests[1]);
    MPI_Isend(to_up, floats, MPI_FLOAT, h->up, 0, MPI_COMM_WORLD, &requests[2]);
    MPI_Isend(to_down, floats, MPI_FLOAT, h->down, 1, MPI_COMM_WORLD, &requests[3]);
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    if (h->down != MPI_PROC_NULL) clEnqueueWriteBuffer(h->q2, h->below, CL_FALSE, 0, bytes, from_down, 0, NULL, NULL);
    if (h->up != MPI_PROC_NULL) clEnqueueWriteBuffer(h->q2, h->above, CL_FALSE, 0, bytes, from_up, 0, NULL, NULL);
    himeno_edges(h, h->q2, p_old, p_new, 0, NULL, NULL);
    clFinish(h->q1);
    clFinish(h->q2);
  }
  free(to_down);
  free(to_up);
  free(from_down);
  free(from_up);
}

/* With fedcl's MPI commands (the paper's Listing 4): the halo exchange is two commands of the second
 * queue, events order the two queues, and the host enqueues every iteration and waits once. */
#include <CL/cl_fedcl_mpi.h>

#include "himeno.h"

const char *const himeno_version = "extension";
const int himeno_distributed = 1;

void himeno_iterate(struct himeno *h, int first, int count) {
  clEnqueueSendrecvBuffer_fn sendrecv = (clEnqueueSendrecvBuffer_fn)
      clGetExtensionFunctionAddressForPlatform(h->platform, "clEnqueueSendrecvBuffer");
  size_t n = h->planes, bytes = h->plane_bytes;
  cl_event edges = NULL, interior = NULL, last[2];
  for (int t = first; t < first + count; t++) {
    cl_mem p_old = h->p[t % 2], p_new = h->p[(t + 1) % 2];
    cl_uint waits = edges ? 2 : 0;  /* the edge planes go once the last iteration has written them */
    last[0] = edges, last[1] = interior;
    sendrecv(h->q2, p_old, h->below, CL_FALSE, himeno_plane(h, n), bytes, h->up, 0, 0, bytes, h->down, 0,
             MPI_COMM_WORLD, waits, waits ? last : NULL, NULL);
    sendrecv(h->q2, p_old, h->above, CL_FALSE, himeno_plane(h, 1), bytes, h->down, 1, 0, bytes, h->up, 1,
             MPI_COMM_WORLD, 0, NULL, NULL);
    himeno_interior(h, h->q1, p_old, p_new, waits / 2, waits ? last : NULL, &interior);
    himeno_edges(h, h->q2, p_old, p_new, 1, &interior, &edges);
    if (waits) clReleaseEvent(last[0]), clReleaseEvent(last[1]);
  }
  clFinish(h->q2);  /* the last edge kernel ran after the last interior one */
  if (edges) clReleaseEvent(edges), clReleaseEvent(interior);
}

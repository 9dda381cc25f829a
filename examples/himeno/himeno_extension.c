/* With fedcl's MPI commands (the paper's Listing 4): the two halo exchanges are commands of their own
 * queues, and events order the queues; the host enqueues every iteration and waits once. */
#include <CL/cl_fedcl_mpi.h>

#include "himeno.h"

const char *const himeno_version = "extension";
const int himeno_distributed = 1;

void himeno_iterate(struct himeno *h, int first, int count) {
  clEnqueueSendrecvBuffer_fn sendrecv = (clEnqueueSendrecvBuffer_fn)
      clGetExtensionFunctionAddressForPlatform(h->platform, "clEnqueueSendrecvBuffer");
  size_t n = h->planes, bytes = h->plane_bytes;
  cl_command_queue q3 = clCreateCommandQueue(h->context, h->device, 0, NULL);
  cl_event interior = NULL, edges = NULL, next_interior, next_edges, halos[3];
  for (int t = first; t < first + count; t++) {
    cl_mem p_old = h->p[t % 2], p_new = h->p[(t + 1) % 2];
    /* The edge planes go once the last iteration has written them; the halos come in meanwhile. */
    cl_event last[2] = {edges, interior};
    cl_uint waits = edges ? 2 : 0;
    sendrecv(h->q2, p_old, h->below, CL_FALSE, himeno_plane(h, n), bytes, h->up, 0, 0, bytes, h->down, 0,
             MPI_COMM_WORLD, waits, waits ? last : NULL, &halos[0]);
    sendrecv(q3, p_old, h->above, CL_FALSE, himeno_plane(h, 1), bytes, h->down, 1, 0, bytes, h->up, 1, MPI_COMM_WORLD,
             waits, waits ? last : NULL, &halos[1]);
    himeno_interior(h, h->q1, p_old, p_new, edges ? 1 : 0, edges ? &edges : NULL, &next_interior);
    halos[2] = next_interior;
    himeno_edges(h, h->q2, p_old, p_new, 3, halos, &next_edges);
    clReleaseEvent(halos[0]), clReleaseEvent(halos[1]);
    if (interior) clReleaseEvent(interior), clReleaseEvent(edges);
    interior = next_interior, edges = next_edges;
  }
  clFinish(h->q1);
  clFinish(h->q2);
  clReleaseCommandQueue(q3);
  if (interior) clReleaseEvent(interior), clReleaseEvent(edges);
}

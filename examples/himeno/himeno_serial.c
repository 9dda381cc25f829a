/* The serial version: one process updates the whole grid on one queue. */
#include "himeno.h"

const char *const himeno_version = "serial";
const int himeno_distributed = 0;

void himeno_iterate(struct himeno *h, int first, int count) {
  for (int t = first; t < first + count; t++) himeno_update(h, h->q1, h->p[t % 2], h->p[(t + 1) % 2], 0, 1, h->planes, 1, 0, NULL, NULL);
  clFinish(h->q1);
}

#include "host_cores.h"

#include <gtest/gtest.h>
#include <sched.h>

// The CPUs a process may run on are its affinity mask's: pinned to one, it has one, whatever the
// machine's count.
TEST(HostCores, CountsTheAffinityMaskNotTheMachine) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(0, sched_getaffinity(0, sizeof all, &all));
  EXPECT_EQ(unsigned(CPU_COUNT(&all)), fedcl::usable_cores());
  int first = 0;
  while (!CPU_ISSET(first, &all)) first++;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(0, sched_setaffinity(0, sizeof one, &one));
  EXPECT_EQ(1u, fedcl::usable_cores());
  ASSERT_EQ(0, sched_setaffinity(0, sizeof all, &all));
}

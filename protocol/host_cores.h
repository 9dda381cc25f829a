// How many CPUs this process may run on, for the choices that depend on a free core (spinning
// waits, helper threads): its affinity mask, which taskset, a cpuset or a pinned service sets,
// rather than the machine's count. A daemon pinned to one core of a 16-core host that spun as if
// it had 16 starved the driver's own threads there: a cross-daemon event took 2 ms instead of
// 40 us (H100, bench/results/2026-11-27T1640-h100-federation-event-busy-poll.txt).
#pragma once

namespace fedcl {

unsigned usable_cores();

}  // namespace fedcl

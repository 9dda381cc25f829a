#include "bench_nbody.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include "bench_stats.h"

namespace bench {

// The all-pairs kernel of the sample's shape: bodies are loaded into local memory a tile at a time;
// the mass rides in w (zero for nothing). Nine arguments, as in oclNbodyKernel.cl.
const char *const kNbodyKernelSource = R"CLC(
__kernel void integrate_bodies(__global float4 *new_pos, __global float4 *new_vel,
                               __global const float4 *old_pos, __global const float4 *old_vel,
                               float dt, float damping, float softening_sq, int n,
                               __local float4 *tile) {
  int i = get_global_id(0), lid = get_local_id(0), lsize = get_local_size(0);
  float4 pos = i < n ? old_pos[i] : (float4)(0.0f);
  float3 acc = (float3)(0.0f);
  for (int base = 0; base < n; base += lsize) {
    tile[lid] = base + lid < n ? old_pos[base + lid] : (float4)(0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < lsize; k++) {
      float4 other = tile[k];
      float3 d = other.xyz - pos.xyz;
      float inv = rsqrt(dot(d, d) + softening_sq);
      acc += d * (other.w * inv * inv * inv);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i < n) {
    float4 vel = old_vel[i];
    vel.xyz = (vel.xyz + acc * dt) * damping;
    pos.xyz += vel.xyz * dt;
    new_pos[i] = pos;
    new_vel[i] = vel;
  }
}
)CLC";

namespace {

const float kDt = 0.001f, kDamping = 0.995f, kSofteningSq = 0.01f;

struct Bodies {
  std::vector<cl_float4> pos, vel;
};

// The same bodies on every side: a deterministic cloud of unit masses with small velocities.
Bodies initial_bodies(int n) {
  Bodies bodies{std::vector<cl_float4>(n), std::vector<cl_float4>(n)};
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) / float(1 << 24) * 2.0f - 1.0f;
  };
  for (int i = 0; i < n; i++) {
    bodies.pos[i] = {{next() * 10, next() * 10, next() * 10, 1.0f}};
    bodies.vel[i] = {{next(), next(), next(), 0.0f}};
  }
  return bodies;
}

// The bodies whose first step is checked: all of them up to 4096, else 4096 spread evenly (a host
// step of every one of 65536 bodies would take longer than the device's whole run).
size_t checked_stride(size_t n) { return std::max<size_t>(1, n / 4096); }

// One step on the host of the checked bodies (body k * stride at k), to check the first step a side
// computes. Computed once per size.
const std::vector<cl_float4> &reference_step(const Bodies &bodies) {
  static std::map<size_t, std::vector<cl_float4>> done;
  size_t n = bodies.pos.size(), stride = checked_stride(n);
  std::vector<cl_float4> &next = done[n];
  if (!next.empty()) return next;
  next.resize(n / stride);
  for (size_t c = 0; c < next.size(); c++) {
    size_t i = c * stride;
    const cl_float4 &p = bodies.pos[i];
    double acc[3] = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
      const cl_float4 &o = bodies.pos[j];
      double d[3] = {o.s[0] - p.s[0], o.s[1] - p.s[1], o.s[2] - p.s[2]};
      double inv = 1.0 / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + kSofteningSq);
      for (int k = 0; k < 3; k++) acc[k] += d[k] * (o.s[3] * inv * inv * inv);
    }
    next[c] = p;
    for (int k = 0; k < 3; k++) {
      double v = (bodies.vel[i].s[k] + acc[k] * kDt) * kDamping;
      next[c].s[k] = float(p.s[k] + v * kDt);
    }
  }
  return next;
}

void expect_close(const Side &side, const std::vector<cl_float4> &got, const std::vector<cl_float4> &want) {
  const size_t stride = checked_stride(got.size());
  for (size_t c = 0; c < want.size(); c++)
    for (int k = 0, i = int(c * stride); k < 4; k++)
      if (std::fabs(got[i].s[k] - want[c].s[k]) > 1e-3f * (1.0f + std::fabs(want[c].s[k])))
        throw std::runtime_error(side.label + ": NBody body " + std::to_string(i) + " differs from the host's");
}

Measures measure_nbody(Side &side, const Plan &plan, int n, int steps, int warmup) {
  const std::string name = "nbody." + std::to_string(n);
  const size_t bytes = n * sizeof(cl_float4);
  Bodies bodies = initial_bodies(n);
  OwnedMem pos0(side.buffer(bytes)), pos1(side.buffer(bytes)), vel0(side.buffer(bytes)), vel1(side.buffer(bytes));
  check(clEnqueueWriteBuffer(side.queue, pos0, CL_TRUE, 0, bytes, bodies.pos.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  check(clEnqueueWriteBuffer(side.queue, vel0, CL_TRUE, 0, bytes, bodies.vel.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  OwnedKernel kernel(side.kernel(kNbodyKernelName));
  const size_t local = nbody_local_size(side), global = n;
  std::vector<cl_float4> host_pos(n);
  cl_mem pos[2] = {pos0, pos1}, vel[2] = {vel0, vel1};

  steps = plan.count(steps);
  std::vector<double> step_us, args_us, launch_us, read_us;
  for (int s = -warmup; s < steps; s++) {
    int in = (s + warmup) & 1, out = in ^ 1;
    double t0 = now_us();
    nbody_set_args(kernel, pos[in], vel[in], pos[out], vel[out], n, local);
    double t1 = now_us();
    check(clEnqueueNDRangeKernel(side.queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    double t2 = now_us();
    check(clEnqueueReadBuffer(side.queue, pos[out], CL_TRUE, 0, bytes, host_pos.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    double t3 = now_us();
    if (s == -warmup) expect_close(side, host_pos, reference_step(bodies));
    if (s < 0) continue;
    step_us.push_back(t3 - t0);
    args_us.push_back(t1 - t0);
    launch_us.push_back(t2 - t1);
    read_us.push_back(t3 - t2);
  }
  return {{name + ".step", "ms", median(step_us) / 1000, transfer(LinkCost::kDownload, bytes)},
          {name + ".set_args", "us", median(args_us)},
          {name + ".enqueue", "us", median(launch_us)},
          {name + ".read_wait", "ms", median(read_us) / 1000}};
}

}  // namespace

size_t nbody_local_size(const Side &side) { return std::min<size_t>(256, side.max_work_group_size); }

void nbody_set_args(cl_kernel kernel, cl_mem pos_in, cl_mem vel_in, cl_mem pos_out, cl_mem vel_out, cl_int n,
                    size_t local_size) {
  cl_float dt = kDt, damping = kDamping, softening_sq = kSofteningSq;
  auto set = [&](cl_uint index, size_t size, const void *value) {
    check(clSetKernelArg(kernel, index, size, value), "clSetKernelArg");
  };
  set(0, sizeof(cl_mem), &pos_out);
  set(1, sizeof(cl_mem), &vel_out);
  set(2, sizeof(cl_mem), &pos_in);
  set(3, sizeof(cl_mem), &vel_in);
  set(4, sizeof dt, &dt);
  set(5, sizeof damping, &damping);
  set(6, sizeof softening_sq, &softening_sq);
  set(7, sizeof n, &n);
  set(8, local_size * sizeof(cl_float4), nullptr);
}

// Steps and warm-ups per size: the large sizes take seconds a step on a CPU (about 0.5 s at 16384
// with PoCL on 2 cores); one warm-up step compiles the kernel for the launch.
Measures measure_nbody_1024(Side &side, const Plan &plan) { return measure_nbody(side, plan, 1024, 40, 3); }
Measures measure_nbody_4096(Side &side, const Plan &plan) { return measure_nbody(side, plan, 4096, 10, 3); }
Measures measure_nbody_16384(Side &side, const Plan &plan) { return measure_nbody(side, plan, 16384, 5, 1); }
Measures measure_nbody_65536(Side &side, const Plan &plan) { return measure_nbody(side, plan, 65536, 10, 1); }

}  // namespace bench

#include "federation_split.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_nbody.h"
#include "bench_stats.h"

namespace bench {

namespace {

// bench_nbody.cpp's constants (nbody_set_args sets them).
const float kDt = 0.001f, kDamping = 0.995f, kSofteningSq = 0.01f;
const int kWarmupSteps = 2;

using Bodies = std::vector<cl_float4>;

// A deterministic cloud of unit masses with small velocities, as bench_nbody.cpp makes it.
void initial_bodies(int n, Bodies *pos, Bodies *vel) {
  pos->resize(n);
  vel->resize(n);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) / float(1 << 24) * 2.0f - 1.0f;
  };
  for (int i = 0; i < n; i++) {
    (*pos)[i] = {{next() * 10, next() * 10, next() * 10, 1.0f}};
    (*vel)[i] = {{next(), next(), next(), 0.0f}};
  }
}

// Body i after one step, on the host in double precision.
cl_float4 host_step(const Bodies &pos, const Bodies &vel, size_t i) {
  const cl_float4 &p = pos[i];
  double acc[3] = {0, 0, 0};
  for (const cl_float4 &o : pos) {
    double d[3] = {o.s[0] - p.s[0], o.s[1] - p.s[1], o.s[2] - p.s[2]};
    double inv = 1.0 / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + kSofteningSq);
    for (int k = 0; k < 3; k++) acc[k] += d[k] * (o.s[3] * inv * inv * inv);
  }
  cl_float4 next = p;
  for (int k = 0; k < 3; k++) next.s[k] = float(p.s[k] + (vel[i].s[k] + acc[k] * kDt) * kDamping * kDt);
  return next;
}

bool close(const cl_float4 &got, const cl_float4 &want) {
  for (int k = 0; k < 4; k++)
    if (!(std::fabs(got.s[k] - want.s[k]) <= 1e-3f * (1.0f + std::fabs(want.s[k])))) return false;
  return true;
}

// One node's part: its bodies [first, first + count), its kernel and buffers. all: every body's
// position as this node last gathered it; out: the new positions of its own bodies (at their
// indices); vel: its bodies' velocities, double-buffered.
struct Part {
  const Node *node;
  size_t first = 0, count = 0;
  std::unique_ptr<OwnedMem> all, out, vel[2];
  std::unique_ptr<OwnedKernel> kernel;
};

class Split {
 public:
  Split(Federation &fed, size_t nodes, int n, size_t local, const Bodies &pos, const Bodies &vel)
      : n_(n), local_(local), bytes_(n * sizeof(cl_float4)) {
    const size_t groups = n / local;
    size_t given = 0;
    for (size_t j = 0; j < nodes; j++) {
      Part part;
      part.node = &fed.nodes.at(j);
      size_t my_groups = groups / nodes + (j < groups % nodes ? 1 : 0);
      part.first = given;
      part.count = my_groups * local;
      given += part.count;
      part.all = std::make_unique<OwnedMem>(fed.buffer(bytes_));
      part.out = std::make_unique<OwnedMem>(fed.buffer(bytes_));
      for (auto &v : part.vel) v = std::make_unique<OwnedMem>(fed.buffer(bytes_));
      part.kernel = std::make_unique<OwnedKernel>(fed.kernel(kNbodyKernelName));
      cl_command_queue q = part.node->queue;
      check(clEnqueueWriteBuffer(q, *part.all, CL_TRUE, 0, bytes_, pos.data(), 0, nullptr, nullptr),
            "clEnqueueWriteBuffer (positions)");
      check(clEnqueueWriteBuffer(q, *part.vel[0], CL_TRUE, 0, bytes_, vel.data(), 0, nullptr, nullptr),
            "clEnqueueWriteBuffer (velocities)");
      parts_.push_back(std::move(part));
    }
  }

  // One step: every node integrates its bodies; every node then gathers all new positions.
  void step() {
    std::vector<cl_event> done(parts_.size());
    for (size_t j = 0; j < parts_.size(); j++) {
      Part &p = parts_[j];
      nbody_set_args(*p.kernel, *p.all, *p.vel[step_ & 1], *p.out, *p.vel[(step_ + 1) & 1], n_, local_);
      check(clEnqueueNDRangeKernel(p.node->queue, *p.kernel, 1, &p.first, &p.count, &local_, 0, nullptr, &done[j]),
            "clEnqueueNDRangeKernel (NBody share)");
      check(clFlush(p.node->queue), "clFlush");
    }
    for (Part &to : parts_) {
      for (size_t i = 0; i < parts_.size(); i++) {
        const Part &from = parts_[i];
        size_t offset = from.first * sizeof(cl_float4), size = from.count * sizeof(cl_float4);
        check(clEnqueueCopyBuffer(to.node->queue, *from.out, *to.all, offset, offset, size, 1, &done[i], nullptr),
              "clEnqueueCopyBuffer (gathering a share)");
      }
      check(clFlush(to.node->queue), "clFlush");
    }
    for (Part &p : parts_) check(clFinish(p.node->queue), "clFinish");
    for (cl_event event : done) check(clReleaseEvent(event), "clReleaseEvent");
    step_++;
  }

  // What node j last gathered: every body's position.
  Bodies positions(size_t j) const {
    Bodies got(n_);
    check(clEnqueueReadBuffer(parts_.at(j).node->queue, *parts_[j].all, CL_TRUE, 0, bytes_, got.data(), 0, nullptr,
                              nullptr),
          "clEnqueueReadBuffer (positions)");
    return got;
  }

 private:
  int n_;
  size_t local_, bytes_;
  std::vector<Part> parts_;
  int step_ = 0;
};

int default_bodies(const Federation &fed) { return fed.nodes.at(0).type & CL_DEVICE_TYPE_GPU ? 131072 : 8192; }

}  // namespace

Measures measure_split(Federation &fed, const FederationPlan &plan) {
  size_t local = 256;
  for (const Node &node : fed.nodes) local = std::min(local, node.max_work_group_size);
  const int n = plan.bodies ? plan.bodies : default_bodies(fed);
  if (n <= 0 || n % local != 0)
    throw std::runtime_error("split: the body count must be a multiple of " + std::to_string(local));
  Bodies pos, vel;
  initial_bodies(n, &pos, &vel);
  const size_t max_nodes = std::min(fed.nodes.size(), plan.max_split_nodes);
  const int steps = plan.quick ? 3 : plan.split_steps;

  Measures out{{"split.bodies", "bodies", double(n)}};
  // Every node count's run side by side, their steps interleaved, so that a change in the
  // machine's load touches them alike.
  std::vector<std::unique_ptr<Split>> splits;
  for (size_t k = 1; k <= max_nodes; k++) splits.push_back(std::make_unique<Split>(fed, k, n, local, pos, vel));
  std::vector<std::vector<double>> step_us(max_nodes);
  for (int s = -kWarmupSteps; s < steps; s++) {
    for (size_t k = 1; k <= max_nodes; k++) {
      double start = now_us();
      splits[k - 1]->step();
      double elapsed = now_us() - start;
      if (s >= 0) step_us[k - 1].push_back(elapsed);
    }
    if (s == -kWarmupSteps) {
      // The one-node run's first step against the host, on 64 bodies spread over all.
      Bodies got = splits[0]->positions(0);
      for (int i = 0; i < n; i += n / 64)
        if (!close(got[i], host_step(pos, vel, i)))
          throw std::runtime_error("split: body " + std::to_string(i) + " after one step differs from the host's");
    }
  }
  // Every node of every run gathered the same positions as the one-node run.
  const Bodies reference = splits[0]->positions(0);
  for (size_t k = 2; k <= max_nodes; k++)
    for (size_t j = 0; j < k; j++) {
      Bodies got = splits[k - 1]->positions(j);
      for (int i = 0; i < n; i++)
        if (!close(got[i], reference[i]))
          throw std::runtime_error("split: on " + std::to_string(k) + " nodes, node " + std::to_string(j) +
                                   " holds body " + std::to_string(i) + " unlike the one-node run");
    }
  const double one_node_ms = median(step_us[0]) / 1000;
  for (size_t k = 1; k <= max_nodes; k++) {
    double ms = median(step_us[k - 1]) / 1000;
    const std::string name = "split." + std::to_string(k);
    out.push_back({name + ".step", "ms", ms});
    out.push_back({name + ".speedup", "x", one_node_ms / ms});
    out.push_back({name + ".efficiency", "x", one_node_ms / ms / k});
  }
  return out;
}

}  // namespace bench

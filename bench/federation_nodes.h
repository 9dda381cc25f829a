// The federation as fedcl_federation_bench sees it: the fedcl platform, whose devices are the nodes
// (one device per fedcld, in FEDCL_HOSTS order), one context over all of them, two in-order queues
// per node and one program built for every node.
#pragma once

#include <CL/cl.h>

#include <memory>
#include <string>
#include <vector>

namespace bench {

struct Node {
  cl_device_id device = nullptr;
  std::string name;            // CL_DEVICE_NAME, "<backend device> @ <node>"
  cl_uint compute_units = 0;   // CL_DEVICE_MAX_COMPUTE_UNITS: the capacity this node was given
  cl_device_type type = 0;
  size_t max_work_group_size = 0;
  cl_command_queue queue = nullptr;   // the node's main queue
  cl_command_queue second = nullptr;  // another in-order queue of the same device
};

struct Federation {
  cl_platform_id platform = nullptr;
  std::string platform_version;
  cl_context context = nullptr;
  cl_program program = nullptr;
  std::vector<Node> nodes;

  Federation() = default;
  Federation(const Federation &) = delete;
  ~Federation();

  cl_kernel kernel(const char *name) const;
  cl_mem buffer(size_t size, cl_mem_flags flags = CL_MEM_READ_WRITE) const;
};

// Opens the fedcl platform and takes its first max_nodes devices as the nodes (all if 0). Throws
// std::runtime_error naming the call that failed.
std::unique_ptr<Federation> open_federation(size_t max_nodes);

}  // namespace bench

// A PyOpenCL script computes the same numbers on fedcl as on PoCL used directly.
#include <unistd.h>

#include <fstream>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

// A vendors folder that shows the loader fedcl and PoCL side by side.
class VendorsDir {
 public:
  VendorsDir() {
    char pattern[] = "/tmp/fedcl-vendors-XXXXXX";
    if (!mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    copy(std::string(FEDCL_VENDORS_DIR) + "/fedcl.icd", path_ + "/fedcl.icd");
    copy("/etc/OpenCL/vendors/pocl.icd", path_ + "/pocl.icd");
  }
  ~VendorsDir() {
    for (const char *name : {"/fedcl.icd", "/pocl.icd"}) unlink((path_ + name).c_str());
    rmdir(path_.c_str());
  }
  const std::string &path() const { return path_; }

 private:
  static void copy(const std::string &from, const std::string &to) {
    std::ifstream in(from);
    if (!in) throw std::runtime_error("cannot read " + from);
    std::ofstream(to) << in.rdbuf();
  }
  std::string path_;
};

}  // namespace

TEST(PyOpenCL, SameResultsOnFedclAndPocl) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  VendorsDir vendors;
  std::string output;
  // PYOPENCL_NO_CACHE: build from source every time, as fast here as PyOpenCL's binary cache and
  // writing nothing under the user's home.
  int status = run_command("OCL_ICD_VENDORS=" + vendors.path() + " PYOPENCL_NO_CACHE=1 /usr/bin/python3 " PYOPENCL_SCRIPT,
                           &output);
  EXPECT_EQ(0, status) << output;
  EXPECT_NE(std::string::npos, output.find("fedcl and PoCL agree")) << output;
}

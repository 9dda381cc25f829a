# Debian packages: `cpack -G DEB` in the build directory makes
#   fedcl_<version>_amd64.deb       the driver (libfedcl.so and its .icd file), `fedcl status`, hosts.conf
#   fedcld_<version>_amd64.deb      the daemon, its systemd unit and fedcld.conf
#   fedcl-mpi_<version>_amd64.deb   the MPI commands (libfedcl_mpi.so), apart so that the driver, which
#                                   every OpenCL program of a node loads, never pulls in MPI
# Library dependencies come from dpkg-shlibdeps (dpkg-dev): libssl3 for TLS (driver and daemon) among
# them. No maintainer scripts: installing starts
# and enables nothing; /etc files are conffiles, so an administrator's edits survive upgrades.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fedcl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "fedcl maintainers <fedcl@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenCL platform federating the devices of many machines")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# Install rules run with the prefix /usr and the staging folder as DESTDIR, so that configuration
# lands in /etc as with `cmake --install --prefix /usr` (install_paths.cmake).
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL driver daemon)
if(TARGET fedcl_mpi)
  list(APPEND CPACK_COMPONENTS_ALL mpi)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/fedcl")

set(CPACK_DEBIAN_DRIVER_PACKAGE_NAME fedcl)
set(CPACK_DEBIAN_DRIVER_PACKAGE_SECTION libs)
# The ICD loader opens the driver; the driver itself does not link it.
set(CPACK_DEBIAN_DRIVER_PACKAGE_DEPENDS "ocl-icd-libopencl1 | libopencl1")
set(CPACK_COMPONENT_DRIVER_DESCRIPTION "fedcl OpenCL driver: remote devices served by fedcld daemons
 libfedcl.so, an OpenCL ICD whose devices live on other nodes, registered in /etc/OpenCL/vendors;
 /etc/fedcl/hosts.conf lists the daemons; `fedcl status` shows what they serve.")

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME fedcld)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
# The daemon serves the node's own OpenCL driver: any ICD will do (pocl-opencl-icd on a CPU node).
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
# The openssl command makes a daemon's key and certificate for --tls-cert (README, "TLS").
set(CPACK_DEBIAN_DAEMON_PACKAGE_SUGGESTS "openssl")
set(CPACK_COMPONENT_DAEMON_DESCRIPTION "fedcl bridge daemon: serves this node's OpenCL devices
 fedcld, configured in /etc/fedcl/fedcld.conf, with a systemd unit (not enabled on install).")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME fedcl-mpi)
set(CPACK_DEBIAN_MPI_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_MPI_PACKAGE_DEPENDS "fedcl (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_MPI_DESCRIPTION "fedcl MPI commands (clEnqueueSendBuffer, clEnqueueRecvBuffer)
 libfedcl_mpi.so, loaded by the fedcl driver when an MPI program asks for the MPI commands.")

# dpkg's conffiles: the files under /etc of each package.
set(conffiles ${CMAKE_CURRENT_BINARY_DIR}/conffiles)
file(WRITE ${conffiles}/driver/conffiles "/etc/OpenCL/vendors/fedcl.icd\n/etc/fedcl/hosts.conf\n")
file(WRITE ${conffiles}/daemon/conffiles "/etc/fedcl/fedcld.conf\n")
set(CPACK_DEBIAN_DRIVER_PACKAGE_CONTROL_EXTRA ${conffiles}/driver/conffiles)
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA ${conffiles}/daemon/conffiles)

include(CPack)

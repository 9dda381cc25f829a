# Debian packages: `cpack -G DEB` in the build directory makes
#   fedcl_<version>-1_amd64.deb       the driver (libfedcl.so and its .icd file), `fedcl status`,
#                                     hosts.conf
#   fedcld_<version>-1_amd64.deb      the daemon, its systemd unit and fedcld.conf
#   fedcl-mpi_<version>-1_amd64.deb   the MPI commands (libfedcl_mpi.so), apart so that the driver,
#                                     which every OpenCL program of a node loads, never pulls in MPI
# and each its manual pages, copyright and changelog.
# Library dependencies come from dpkg-shlibdeps (dpkg-dev): libssl3 for TLS (driver and daemon) among
# them. No maintainer scripts: installing starts and enables nothing, and the libraries, in a
# directory of their own, need no ldconfig; /etc files are conffiles, so an administrator's edits
# survive upgrades. lintian checks them (tests/package/package_test.sh); docs/install.md explains
# what it still says.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fedcl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Debian revision: the packages' version is PROJECT_VERSION-1, as the latest entry of
# packaging/changelog says (package_test.sh checks that they agree).
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
# The three packages come from one source, whose changelog and copyright they share.
set(CPACK_DEBIAN_PACKAGE_SOURCE fedcl)
# The maintainer's address and the homepage are placeholders (lintian refuses an address on
# localhost): a site that builds its own packages puts its own.
set(CPACK_PACKAGE_CONTACT "fedcl maintainers <fedcl@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenCL platform federating the devices of many machines")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# Install rules run with the prefix /usr and the staging folder as DESTDIR, so that configuration
# lands in /etc as with `cmake --install --prefix /usr` (install_paths.cmake).
set(CPACK_SET_DESTDIR ON)
# Debian ships stripped binaries (lintian: unstripped-binary-or-object); the build tree keeps its
# debugging information.
set(CPACK_STRIP_FILES ON)
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
# The long descriptions' lines stay under 80 characters (lintian:
# extended-description-line-too-long).
set(CPACK_COMPONENT_DRIVER_DESCRIPTION "fedcl OpenCL driver: remote devices served by fedcld daemons
 libfedcl.so, an OpenCL ICD registered in /etc/OpenCL/vendors, whose devices
 live on other nodes. /etc/fedcl/hosts.conf lists the daemons; `fedcl status`
 shows what they serve.")

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME fedcld)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
# The daemon serves the node's own OpenCL driver: any ICD will do (pocl-opencl-icd on a CPU node).
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
# The openssl command makes a daemon's key and certificate for --tls-cert (README, "TLS").
set(CPACK_DEBIAN_DAEMON_PACKAGE_SUGGESTS "openssl")
set(CPACK_COMPONENT_DAEMON_DESCRIPTION "fedcl bridge daemon: serves this node's OpenCL devices
 fedcld, configured in /etc/fedcl/fedcld.conf, with a systemd unit that
 installing does not enable.")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME fedcl-mpi)
set(CPACK_DEBIAN_MPI_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_MPI_PACKAGE_DEPENDS "fedcl (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})")
set(CPACK_COMPONENT_MPI_DESCRIPTION "fedcl MPI commands (clEnqueueSendBuffer, clEnqueueRecvBuffer)
 libfedcl_mpi.so, loaded by the fedcl driver when an MPI program asks for the
 MPI commands.")

# dpkg's conffiles: the files under /etc of each package.
set(conffiles ${CMAKE_CURRENT_BINARY_DIR}/conffiles)
file(WRITE ${conffiles}/driver/conffiles "/etc/OpenCL/vendors/fedcl.icd\n/etc/fedcl/hosts.conf\n")
file(WRITE ${conffiles}/daemon/conffiles "/etc/fedcl/fedcld.conf\n")
set(CPACK_DEBIAN_DRIVER_PACKAGE_CONTROL_EXTRA ${conffiles}/driver/conffiles)
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA ${conffiles}/daemon/conffiles)

include(CPack)

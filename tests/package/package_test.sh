#!/usr/bin/env bash
# The Debian packages end to end, as an administrator uses them: build them with cpack, check their
# contents, dependencies and conffiles, check them against Debian's rules with lintian (an error
# fails; where lintian is not installed that check is skipped, saying so), install them with dpkg
# (nothing may be enabled or started), run an OpenCL program through the installed driver against
# the installed daemon and have the driver find the installed MPI plug-in, then remove and purge
# them, leaving nothing behind.
#
# package_test.sh BUILD_DIR OPENCL_PROGRAM
# Needs root: exits 77 (skipped), saying why, otherwise. It installs into this machine's
# /etc/OpenCL/vendors and /etc/fedcl for a few seconds; the trap purges the packages on any exit.
set -euo pipefail

build=$1
program=$2
packages=(fedcl-mpi fedcld fedcl)

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "==> $*"; }

((EUID == 0)) || skip "installing packages needs root"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps dpkg-architecture dpkg-parsechangelog python3; do
  command -v "$tool" >/dev/null || skip "$tool is missing (scripts/setup.sh installs it)"
done
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed'; then
    skip "package $package is installed on this machine: not touching it"
  fi
done

work=$(mktemp -d /tmp/fedcl-package-XXXXXX)
daemon=
had_etc_fedcl=no
[[ -e /etc/fedcl ]] && had_etc_fedcl=yes
cleanup() {
  if [[ -n $daemon ]]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step "cpack -G DEB"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
cpack_setting() { sed -n "s/^set($1 \"\\(.*\\)\")\$/\\1/p" "$build/CPackConfig.cmake"; }
version=$(cpack_setting CPACK_PACKAGE_VERSION)-$(cpack_setting CPACK_DEBIAN_PACKAGE_RELEASE)
arch=$(dpkg --print-architecture)
libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/fedcl
deb() { echo "$work/out/${1}_${version}_${arch}.deb"; }
built=()
for package in "${packages[@]}"; do [[ -f $(deb "$package") ]] && built+=("$package"); done
[[ -f $(deb fedcl) && -f $(deb fedcld) ]] || fail "cpack made ${built[*]:-nothing}, not fedcl and fedcld ($(ls "$work/out"))"
echo "built: ${built[*]}"

step "contents, dependencies, conffiles"
contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$'; }
expect_file() { contents "$1" | grep -qx "$2" || fail "$1 lacks $2: $(contents "$1" | tr '\n' ' ')"; }
expect_file fedcl /etc/OpenCL/vendors/fedcl.icd
expect_file fedcl /etc/fedcl/hosts.conf
expect_file fedcl /usr/bin/fedcl
contents fedcl | grep -qx "$libdir/libfedcl.so" ||
  fail "fedcl lacks $libdir/libfedcl.so: $(contents fedcl | grep 'libfedcl\.so')" \
    "(a build directory configured before the multiarch paths keeps CMAKE_INSTALL_LIBDIR=lib in its cache)"
expect_file fedcl /usr/share/man/man1/fedcl.1.gz
expect_file fedcl /usr/share/man/man5/hosts.conf.5.gz
expect_file fedcld /usr/bin/fedcld
expect_file fedcld /usr/lib/systemd/system/fedcld.service
expect_file fedcld /etc/fedcl/fedcld.conf
expect_file fedcld /usr/share/man/man8/fedcld.8.gz
expect_file fedcld /usr/share/man/man5/fedcld.conf.5.gz
[[ ! -f $(deb fedcl-mpi) ]] || expect_file fedcl-mpi "$libdir/libfedcl_mpi.so"
for package in "${built[@]}"; do
  expect_file "$package" "/usr/share/doc/$package/copyright"
  expect_file "$package" "/usr/share/doc/$package/changelog.Debian.gz"
  [[ $(dpkg-deb -f "$(deb "$package")" Version) == "$version" ]] || fail "$package's version is not $version"
done
changelog_version=$(dpkg-deb --fsys-tarfile "$(deb fedcl)" | tar -xO ./usr/share/doc/fedcl/changelog.Debian.gz |
  gzip -d | dpkg-parsechangelog -l - -S Version)
[[ $changelog_version == "$version" ]] ||
  fail "the latest entry of packaging/changelog is for $changelog_version, the packages are $version: add an entry"
depends() { dpkg-deb -f "$(deb "$1")" Depends; }
echo "fedcl depends: $(depends fedcl)"
echo "fedcld depends: $(depends fedcld)"
[[ $(depends fedcl) == *libcapnp* ]] || fail "fedcl does not depend on Cap'n Proto"
[[ $(depends fedcl) == *"ocl-icd-libopencl1 | libopencl1"* ]] || fail "fedcl does not depend on an ICD loader"
[[ $(depends fedcl) != *mpi* ]] || fail "the driver must not depend on MPI"
[[ $(depends fedcld) == *libuv1* && $(depends fedcld) == *libcapnp* ]] || fail "fedcld lacks libuv1 or Cap'n Proto"
if [[ -f $(deb fedcl-mpi) ]]; then
  echo "fedcl-mpi depends: $(depends fedcl-mpi)"
  [[ $(depends fedcl-mpi) == *"fedcl (= $version)"* && $(depends fedcl-mpi) == *libopenmpi* ]] ||
    fail "fedcl-mpi must depend on fedcl (= $version) and Open MPI"
fi
control() { dpkg-deb --ctrl-tarfile "$(deb "$1")" | tar -xO "./$2" 2>/dev/null || true; }
[[ $(control fedcl conffiles) == $'/etc/OpenCL/vendors/fedcl.icd\n/etc/fedcl/hosts.conf' ]] || fail "fedcl's conffiles: $(control fedcl conffiles)"
[[ $(control fedcld conffiles) == /etc/fedcl/fedcld.conf ]] || fail "fedcld's conffiles: $(control fedcld conffiles)"
# No maintainer script may start or enable a service (the packages have none today).
for package in "${built[@]}"; do
  for script in preinst postinst prerm postrm; do
    if control "$package" "$script" | grep -Eq 'systemctl|deb-systemd|invoke-rc\.d|update-rc\.d|service '; then
      fail "$package's $script starts or enables a service: $(control "$package" "$script")"
    fi
  done
done

step "lintian"
debs=()
for package in "${built[@]}"; do debs+=("$(deb "$package")"); done
if command -v lintian >/dev/null; then
  # Errors fail; the warnings left are explained in docs/install.md ("What lintian says").
  lintian --fail-on error "${debs[@]}" || fail "lintian reports errors (E: above)"
else
  echo "lintian is not installed (scripts/setup.sh installs it): the packages are not checked against Debian's rules"
fi

step "dpkg -i"
dpkg -i "${debs[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
library=$(cat /etc/OpenCL/vendors/fedcl.icd)
[[ $library == "$libdir/libfedcl.so" && -f $library ]] || fail "/etc/OpenCL/vendors/fedcl.icd names $library, not $libdir/libfedcl.so"
ls /etc/systemd/system/*.wants/fedcld.service >/dev/null 2>&1 && fail "installing enabled fedcld"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify /usr/lib/systemd/system/fedcld.service || fail "systemd-analyze verify refuses the unit"
else
  echo "systemd-analyze is not installed: the unit is not verified"
fi

step "an OpenCL program through the installed driver and daemon"
printf 'listen = 127.0.0.1:0\nname = package-test\nlog-level = warn\n' >"$work/fedcld.conf"
# The daemon serves the node's real platforms: every installed ICD (it leaves fedcl's own out).
OCL_ICD_VENDORS=/etc/OpenCL/vendors /usr/bin/fedcld --config "$work/fedcld.conf" --port-file "$work/port" &
daemon=$!
for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || fail "the installed fedcld did not start"
export OCL_ICD_VENDORS=/etc/OpenCL/vendors FEDCL_HOSTS=127.0.0.1:$(cat "$work/port")
/usr/bin/fedcl status || fail "fedcl status did not reach the installed daemon"
FEDCL_EXAMPLE_PLATFORM=fedcl "$program" | tee "$work/program.log"
grep -q PASS "$work/program.log" || fail "$program did not pass through the installed driver"
kill "$daemon"
wait "$daemon" || true
daemon=
if [[ -f $(deb fedcl-mpi) ]]; then
  # An MPI program looks up an MPI command; the driver opens the plug-in beside itself. The build
  # tree's copy, its fallback, must not be the one found.
  plugin=$(python3 - "$library" <<'PYTHON'
import ctypes, sys
lookup = ctypes.CDLL(sys.argv[1]).clGetExtensionFunctionAddress
lookup.restype, lookup.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
if not lookup(b"clEnqueueSendBuffer"):
    sys.exit("the driver found no clEnqueueSendBuffer")
print(next(line.split()[-1] for line in open("/proc/self/maps") if "libfedcl_mpi" in line))
PYTHON
  ) || fail "the installed driver did not load the MPI plug-in"
  [[ $plugin == "$libdir/libfedcl_mpi.so" ]] || fail "the installed driver loaded $plugin, not $libdir/libfedcl_mpi.so"
  echo "the installed driver loads $plugin"
fi

step "dpkg -r, then dpkg --purge"
installed_files=$(for package in "${built[@]}"; do contents "$package"; done)
dpkg -r "${built[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -r failed"; }
for file in $installed_files; do
  case $file in
    /etc/*) [[ -e $file ]] || fail "dpkg -r removed the conffile $file (only --purge should)" ;;
    *) [[ ! -e $file ]] || fail "dpkg -r left $file" ;;
  esac
done
dpkg --purge "${built[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge failed"; }
for file in $installed_files; do [[ ! -e $file ]] || fail "dpkg --purge left $file"; done
[[ $had_etc_fedcl == yes || ! -e /etc/fedcl ]] || fail "dpkg --purge left /etc/fedcl"
echo "PASS"

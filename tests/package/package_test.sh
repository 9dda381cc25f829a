#!/usr/bin/env bash
# The Debian packages end to end, as an administrator uses them: build them with cpack, check their
# contents, dependencies and conffiles, install them with dpkg (nothing may be enabled or started),
# run an OpenCL program through the installed driver against the installed daemon, then remove and
# purge them, leaving nothing behind.
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
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || skip "$tool is missing (scripts/setup.sh installs dpkg-dev)"
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
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
arch=$(dpkg --print-architecture)
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
contents fedcl | grep -q '^/usr/lib/.*libfedcl\.so$' || fail "fedcl lacks libfedcl.so"
expect_file fedcld /usr/bin/fedcld
expect_file fedcld /usr/lib/systemd/system/fedcld.service
expect_file fedcld /etc/fedcl/fedcld.conf
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
# CPack's only scripts run ldconfig for the libraries; none may start or enable a service.
for package in "${built[@]}"; do
  for script in preinst postinst prerm postrm; do
    if control "$package" "$script" | grep -Eq 'systemctl|deb-systemd|invoke-rc\.d|update-rc\.d|service '; then
      fail "$package's $script starts or enables a service: $(control "$package" "$script")"
    fi
  done
done

step "dpkg -i"
debs=()
for package in "${built[@]}"; do debs+=("$(deb "$package")"); done
dpkg -i "${debs[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
library=$(cat /etc/OpenCL/vendors/fedcl.icd)
[[ -f $library ]] || fail "/etc/OpenCL/vendors/fedcl.icd names $library, which is not there"
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

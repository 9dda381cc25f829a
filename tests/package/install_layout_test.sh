#!/usr/bin/env bash
# Where `cmake --install` puts things: with the prefix /usr, the .icd file in /etc/OpenCL/vendors and
# the configuration in /etc/fedcl, as distribution packages have them; any other prefix keeps them
# under PREFIX/etc. The driver lies in the multiarch library directory's fedcl/, where the .icd file
# says. Staged with DESTDIR, so it needs no root. An existing configuration file is kept.
#
# install_layout_test.sh BUILD_DIR
set -euo pipefail

build=$1
work=$(mktemp -d /tmp/fedcl-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

install_to() {  # DESTDIR PREFIX
  DESTDIR=$1 cmake --install "$build" --prefix "$2" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install failed"; }
}
expect_text() {  # FILE TEXT: FILE exists and contains TEXT
  [[ -f $1 ]] || fail "$1 was not installed"
  grep -qF -- "$2" "$1" || fail "$1 does not say '$2': $(cat "$1")"
}

usr=$work/usr-stage
install_to "$usr" /usr
library=$(cat "$usr/etc/OpenCL/vendors/fedcl.icd")
[[ $library == /usr/lib/*/fedcl/libfedcl.so && -f $usr$library ]] ||
  fail "fedcl.icd names $library, not /usr/lib/<triplet>/fedcl/libfedcl.so, or it was not installed"
expect_text "$usr/etc/fedcl/hosts.conf" "fedcl hosts file"
expect_text "$usr/etc/fedcl/fedcld.conf" "fedcld configuration"
expect_text "$usr/usr/lib/systemd/system/fedcld.service" "ExecStart=/usr/bin/fedcld --config /etc/fedcl/fedcld.conf"
[[ -x $usr/usr/bin/fedcl && -x $usr/usr/bin/fedcld ]] || fail "fedcl or fedcld missing from /usr/bin"
[[ ! -e $usr/usr/etc ]] || fail "the /usr prefix must not install into /usr/etc"

# A second install keeps an administrator's configuration.
echo "listen = 10.0.0.1:7070  # mine" >"$usr/etc/fedcl/fedcld.conf"
install_to "$usr" /usr
expect_text "$usr/etc/fedcl/fedcld.conf" "# mine"

opt=$work/opt-stage
install_to "$opt" /opt/fedcl
expect_text "$opt/opt/fedcl/etc/OpenCL/vendors/fedcl.icd" "/opt/fedcl/lib"
expect_text "$opt/opt/fedcl/etc/fedcl/hosts.conf" "fedcl hosts file"
expect_text "$opt/opt/fedcl/lib/systemd/system/fedcld.service" "--config /opt/fedcl/etc/fedcl/fedcld.conf"
[[ ! -e $opt/etc ]] || fail "the prefix /opt/fedcl must keep everything under it"
echo PASS

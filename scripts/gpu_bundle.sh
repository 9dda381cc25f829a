#!/usr/bin/env bash
# Stages what a machine without fedcl's build dependencies (the GPU node: another distribution, no
# package registry) needs to run fedcld, libfedcl and the benchmarks from a Release build made here:
#
#   scripts/gpu_bundle.sh BUILD_DIR OUT_DIR
#
# OUT_DIR/build mirrors the build tree's layout for the files the bench scripts use (bridge-daemon/
# fedcld, icd/libfedcl.so, bench/*, CMakeCache.txt), OUT_DIR/lib holds the Debian libraries they load
# that are not glibc's (Cap'n Proto, libuv, libsodium, OpenSSL, the ocl-icd loader), and OUT_DIR/bin
# the openssl command that tests/tls/make_certificates.sh runs. On the other machine:
#
#   OUT_DIR/setup.sh                      # points OUT_DIR/build/vendors/fedcl.icd at the staged library
#   LD_LIBRARY_PATH=OUT_DIR/lib PATH=OUT_DIR/bin:$PATH bench/run_tls.sh OUT_DIR/build ...
set -euo pipefail
build=${1:?usage: gpu_bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: gpu_bundle.sh BUILD_DIR OUT_DIR}
rm -rf "$out"
mkdir -p "$out/build/bridge-daemon" "$out/build/icd" "$out/build/bench" "$out/build/vendors" "$out/lib" "$out/bin"
cp "$build/bridge-daemon/fedcld" "$out/build/bridge-daemon/"
cp -P "$build"/icd/libfedcl.so* "$out/build/icd/"
for tool in "$build"/bench/fedcl_*; do [[ -x $tool && -f $tool ]] && cp "$tool" "$out/build/bench/"; done
cp "$build/CMakeCache.txt" "$out/build/"
cp "$(command -v openssl)" "$out/bin/"

# Every library the staged programs load, but the C and C++ runtimes (the other machine's are at
# least as new as Debian 12's, and its GPU driver may need them newer).
objects=("$out"/build/bridge-daemon/fedcld "$out"/build/icd/libfedcl.so "$out"/build/bench/* "$out/bin/openssl"
         "$(ldconfig -p | awk '/libOpenCL.so.1 /{ print $NF; exit }')")
for object in "${objects[@]}"; do
  ldd "$object" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cp -L "$(ldconfig -p | awk '/libOpenCL.so.1 /{ print $NF; exit }')" "$out/lib/libOpenCL.so.1"

cat >"$out/setup.sh" <<'EOF'
#!/usr/bin/env bash
# Points the staged ICD file at the staged libfedcl, wherever this folder now is.
here=$(cd "$(dirname "$0")" && pwd)
echo "$here/build/icd/libfedcl.so" >"$here/build/vendors/fedcl.icd"
EOF
chmod +x "$out/setup.sh"
du -sh "$out"

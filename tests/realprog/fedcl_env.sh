# Shared by the real-program suites: a scratch directory, a fedcld on loopback and the two views of
# OpenCL a suite compares, the PoCL platform alone and the fedcl platform alone.
#
# Source it, then call realprog_init BUILD_DIR. Afterwards:
#   realprog_pocl_env  CMD...   runs CMD with only PoCL visible to the ICD loader
#   realprog_fedcl_env CMD...   runs CMD with only fedcl visible, served by the suite's fedcld
#   realprog_daemon_alive       fails (and prints the daemon's log) if fedcld has died
# The daemon is killed and the scratch directory removed when the script exits.

realprog_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

realprog_cleanup() {
  if [ -n "${REALPROG_DAEMON_PID:-}" ]; then
    kill "$REALPROG_DAEMON_PID" 2>/dev/null
    wait "$REALPROG_DAEMON_PID" 2>/dev/null
  fi
  [ -n "${REALPROG_TMP:-}" ] && rm -rf "$REALPROG_TMP"
}

# The .icd file of the system's PoCL, the backend fedcld serves and the reference a suite compares with.
# FEDCL_BACKEND_LIBRARY names another backend's library instead (NVIDIA's, on a GPU node).
realprog_find_pocl_icd() {
  local icd
  if [ -n "${FEDCL_BACKEND_LIBRARY:-}" ]; then
    icd="$REALPROG_TMP/backend.icd"
    echo "$FEDCL_BACKEND_LIBRARY" >"$icd"
    echo "$icd"
    return 0
  fi
  for icd in /etc/OpenCL/vendors/*pocl*.icd; do
    [ -f "$icd" ] && { echo "$icd"; return 0; }
  done
  return 1
}

realprog_start_daemon() {
  local port_file="$REALPROG_TMP/fedcld.port" waited=0
  # A simple command, not a function, in the background: $! must be the daemon itself (env execs it).
  $(realprog_loader_env "$REALPROG_TMP/vendors-pocl") "$REALPROG_FEDCLD" --listen 127.0.0.1:0 --port-file "$port_file" \
    --log-level warn >"$REALPROG_TMP/fedcld.log" 2>&1 &
  REALPROG_DAEMON_PID=$!
  while [ ! -s "$port_file" ]; do
    kill -0 "$REALPROG_DAEMON_PID" 2>/dev/null || { cat "$REALPROG_TMP/fedcld.log" >&2; realprog_fail "fedcld exited at start"; }
    [ "$waited" -ge 100 ] && realprog_fail "fedcld wrote no port file within 10 s"
    sleep 0.1
    waited=$((waited + 1))
  done
  REALPROG_PORT=$(cat "$port_file")
}

realprog_init() {
  local build_dir="$1" pocl_icd
  [ -n "$build_dir" ] || realprog_fail "usage: $0 BUILD_DIR"
  REALPROG_FEDCLD="$build_dir/bridge-daemon/fedcld"
  [ -x "$REALPROG_FEDCLD" ] || realprog_fail "no fedcld at $REALPROG_FEDCLD (build first)"
  [ -f "$build_dir/vendors/fedcl.icd" ] || realprog_fail "no $build_dir/vendors/fedcl.icd (build first)"
  REALPROG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/fedcl-realprog.XXXXXX")
  trap realprog_cleanup EXIT
  pocl_icd=$(realprog_find_pocl_icd) || realprog_fail "no PoCL .icd under /etc/OpenCL/vendors"
  mkdir -p "$REALPROG_TMP/vendors-pocl" "$REALPROG_TMP/vendors-fedcl"
  cp "$pocl_icd" "$REALPROG_TMP/vendors-pocl/"
  cp "$build_dir/vendors/fedcl.icd" "$REALPROG_TMP/vendors-fedcl/"
  realprog_start_daemon
}

# Which drivers the loader sees. Where FEDCL_BACKEND_LIBRARY names the backend, the loader may be the
# Khronos one shipped with CUDA, which reads no OCL_ICD_VENDORS: the libraries are named directly.
realprog_loader_env() {
  local vendors="$1" library
  if [ -n "${FEDCL_BACKEND_LIBRARY:-}" ]; then
    library=$(cat "$vendors"/*.icd)
    echo env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$library"
  else
    echo env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$vendors"
  fi
}

realprog_pocl_env() {
  $(realprog_loader_env "$REALPROG_TMP/vendors-pocl") "$@"
}

realprog_fedcl_env() {
  $(realprog_loader_env "$REALPROG_TMP/vendors-fedcl") FEDCL_HOSTS="127.0.0.1:$REALPROG_PORT" "$@"
}

realprog_daemon_alive() {
  kill -0 "$REALPROG_DAEMON_PID" 2>/dev/null && return 0
  echo "fedcld died; its log:" >&2
  cat "$REALPROG_TMP/fedcld.log" >&2
  return 1
}

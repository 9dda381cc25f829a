# The tests scripts/sanitize.sh runs under ASan and UBSan, and the unit and end-to-end ones under
# ThreadSanitizer: fedcl's own programs in front of daemons (labels unit, e2e, tls, tools, fuzz).

# Unit tests link the static libraries directly: no daemon, no loader.
add_executable(fedcl_unit_tests unit/hosts_test.cpp unit/kernel_args_test.cpp unit/frame_test.cpp
  unit/kernel_names_test.cpp unit/ptx_entries_test.cpp unit/host_cores_test.cpp unit/build_options_test.cpp unit/build_includes_test.cpp unit/peer_inbox_test.cpp unit/node_paths_test.cpp
  unit/auth_test.cpp unit/daemon_config_test.cpp unit/slurm_nodelist_test.cpp unit/resend_buffer_test.cpp unit/send_queue_test.cpp
  unit/tls_pipe_test.cpp unit/tls_records_test.cpp unit/image_layout_test.cpp unit/region_pieces_test.cpp
  unit/kept_message_test.cpp unit/validity_map_test.cpp unit/collective_plan_test.cpp unit/handshake_limits_test.cpp
  unit/host_identity_test.cpp)
target_compile_definitions(fedcl_unit_tests PRIVATE FEDCL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(fedcl_unit_tests PRIVATE fedcld_core fedcl_runtime fedcl_protocol OpenCL::OpenCL GTest::gtest_main)
fedcl_discover_tests(fedcl_unit_tests unit)

add_executable(fedcl_e2e_tests
  e2e/compute_test.cpp e2e/map_test.cpp e2e/event_test.cpp e2e/multi_daemon_test.cpp e2e/object_test.cpp
  e2e/api_error_test.cpp e2e/daemon_failure_test.cpp e2e/remote_error_test.cpp e2e/protocol_test.cpp
  e2e/sync_mode_test.cpp e2e/program_test.cpp e2e/image_test.cpp e2e/dispatch_test.cpp e2e/driver_behaviour_test.cpp
  e2e/printf_test.cpp e2e/peer_protocol_test.cpp e2e/file_transfer_test.cpp e2e/node_file_test.cpp
  e2e/auth_test.cpp e2e/liveness_test.cpp e2e/status_command_test.cpp e2e/resume_test.cpp e2e/metrics_test.cpp e2e/command_buffer_test.cpp
  e2e/command_buffer_multi_device_test.cpp e2e/lifetime_test.cpp e2e/range_coherence_test.cpp e2e/collective_test.cpp e2e/off_loop_test.cpp e2e/transfer_window_test.cpp
  e2e/sandbox_test.cpp e2e/stranger_test.cpp e2e/same_node_test.cpp)
target_link_libraries(fedcl_e2e_tests PRIVATE fedcl_test_support GTest::gtest_main)
target_compile_definitions(fedcl_e2e_tests PRIVATE FEDCL_COMMAND_PATH="$<TARGET_FILE:fedcl_command>"
  FEDCL_REFUSING_BACKEND_PATH="$<TARGET_FILE:fedcl_refusing_backend>" FEDCLD_PATH="$<TARGET_FILE:fedcld>"
  FEDCL_HOSTILE_BACKEND_PATH="$<TARGET_FILE:fedcl_hostile_backend>" FEDCL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(fedcl_e2e_tests fedcl_command fedcl_refusing_backend fedcl_hostile_backend)
fedcl_discover_tests(fedcl_e2e_tests e2e)
# The paths a 2-core machine does not take by itself, each test once more in a process of its own:
# daemons that busy-poll (a GPU node's default), reads below 64 KiB in page-locked slabs (a GPU's) and
# the others streamed from the daemon's mapped chunks, under the tests of commands, events, maps,
# failures and two daemons.
gtest_discover_tests(fedcl_e2e_tests
  DISCOVERY_MODE PRE_TEST TEST_PREFIX busy_poll.
  TEST_FILTER "OneDevice.*:EventTest.*:MapTest.*:RemoteError.*:TwoDaemons.*:ApiErrors.*"
  PROPERTIES TIMEOUT ${FEDCL_TEST_TIMEOUT} LABELS e2e
  ENVIRONMENT "${FEDCL_TEST_ENVIRONMENT}${FEDCL_ENV_SEP}FEDCL_TEST_DAEMON_ARGS=--busy-poll 100 --page-locked-reads yes${FEDCL_ENV_SEP}FEDCL_READ_STREAM_MIN=65536")

# TLS (fedcld --tls, FEDCL_TLS): its own tests (recorded sessions, peer links, refusals), and the e2e
# tests of commands, transfers (reads streamed from 64 KiB), events, maps, two daemons, liveness and
# daemons lost mid-read once more over TLS with each trust root (with the key, large spans are sealed
# and opened on helper threads at both ends, as on machines with cores to spare). Over TCP, as
# between hosts: on a daemon's own host the driver would take its local socket (FEDCL_LOCAL). The certificates
# and the key are made at test time, never committed (make_certificates.sh, the tls_certificates fixture).
set(FEDCL_TLS_DIR ${CMAKE_CURRENT_BINARY_DIR}/tls)
add_test(NAME tls.make_certificates COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tls/make_certificates.sh ${FEDCL_TLS_DIR})
set_tests_properties(tls.make_certificates PROPERTIES FIXTURES_SETUP tls_certificates LABELS tls TIMEOUT 60)
add_executable(fedcl_tls_tests tls/tls_test.cpp tls/tls_relay.cpp)
target_compile_definitions(fedcl_tls_tests PRIVATE FEDCL_TLS_DIR="${FEDCL_TLS_DIR}" FEDCLD_PATH="$<TARGET_FILE:fedcld>"
  FEDCL_COMMAND_PATH="$<TARGET_FILE:fedcl_command>")
target_link_libraries(fedcl_tls_tests PRIVATE fedcl_test_support OpenSSL::SSL GTest::gtest_main)
add_dependencies(fedcl_tls_tests fedcl_command)
gtest_discover_tests(fedcl_tls_tests DISCOVERY_MODE PRE_TEST
  PROPERTIES TIMEOUT ${FEDCL_TEST_TIMEOUT} LABELS tls FIXTURES_REQUIRED tls_certificates
  ENVIRONMENT "${FEDCL_TEST_ENVIRONMENT}${FEDCL_ENV_SEP}FEDCL_LOCAL=off")
# The key's group also runs two crypto helpers at both ends and a key update every 64 records (1 MiB)
# each way, so that CI's 2-core machine takes the parallel paths and key changes end to end.
set(tls_reruns
  "tls_cert|--tls yes --tls-cert ${FEDCL_TLS_DIR}/daemon.pem --tls-key ${FEDCL_TLS_DIR}/daemon.key --tls-ca ${FEDCL_TLS_DIR}/ca.pem|FEDCL_TLS=cert@FEDCL_TLS_CA=${FEDCL_TLS_DIR}/ca.pem@FEDCL_LOCAL=off"
  "tls_psk|--tls yes --key-file ${FEDCL_TLS_DIR}/key|FEDCL_TLS=psk@FEDCL_KEY_FILE=${FEDCL_TLS_DIR}/key@FEDCL_TLS_CRYPTO_THREADS=2@FEDCL_TLS_KEY_UPDATE_RECORDS=64@FEDCL_LOCAL=off")
foreach(run ${tls_reruns})
  string(REPLACE "|" ";" fields "${run}")
  list(GET fields 0 prefix)
  list(GET fields 1 daemon_args)
  list(GET fields 2 client_environment)
  string(REPLACE "@" "${FEDCL_ENV_SEP}" client_environment "${client_environment}")
  gtest_discover_tests(fedcl_e2e_tests
    DISCOVERY_MODE PRE_TEST TEST_PREFIX ${prefix}.
    TEST_FILTER "OneDevice.*:NoResume.*:EventTest.*:MapTest.*:TwoDaemons.*:Liveness.*:DaemonFailure.KilledDaemonTurnsIntoErrors:DaemonFailure.BlockingReadInFlightWhenTheDaemonDies:Resume.ConnectionsDropped*:Resume.PastTheWindow*"
    PROPERTIES TIMEOUT ${FEDCL_TEST_TIMEOUT} LABELS tls FIXTURES_REQUIRED tls_certificates
    ENVIRONMENT "${FEDCL_TEST_ENVIRONMENT}${FEDCL_ENV_SEP}FEDCL_TEST_DAEMON_ARGS=${daemon_args}${FEDCL_ENV_SEP}${client_environment}${FEDCL_ENV_SEP}FEDCL_READ_STREAM_MIN=65536")
endforeach()

# fedcl's TLS record layer against OpenSSL's and GnuTLS's command-line tools, each the other end of
# a real TCP connection (tls/interop/interop_test.cpp): both roles, both directions, more than 2^16
# records and KeyUpdates each way. Two crypto helpers, so that large spans take the parallel paths.
add_executable(fedcl_tls_interop_tests tls/interop/interop_test.cpp tls/interop/pattern.cpp
  tls/interop/record_tally.cpp tls/interop/peer_process.cpp tls/interop/record_endpoint.cpp)
target_include_directories(fedcl_tls_interop_tests PRIVATE support)
target_link_libraries(fedcl_tls_interop_tests PRIVATE fedcl_tls GTest::gtest_main Threads::Threads)
gtest_discover_tests(fedcl_tls_interop_tests DISCOVERY_MODE PRE_TEST
  PROPERTIES TIMEOUT 60 LABELS "tls${FEDCL_ENV_SEP}interop" ENVIRONMENT "FEDCL_TLS_CRYPTO_THREADS=2")


# The tenants issue's symlink race on node files at its 100,000 loads (label long; the per-commit
# suite runs the same test with 1,000).
add_test(NAME node_files.symlink_race_100k
  COMMAND fedcl_e2e_tests --gtest_filter=NodeFiles.ASymlinkSwappedInMidOpenNeverServesAFileOutsideTheRoot)
set_tests_properties(node_files.symlink_race_100k PROPERTIES LABELS long TIMEOUT 1800
  ENVIRONMENT "${FEDCL_TEST_ENVIRONMENT};FEDCL_TEST_NODE_FILE_RACE_TRIES=100000")

# The issue's case of a long kernel on a healthy daemon: 60 s under the default 10 s heartbeat limit
# (label long: not in the per-commit suite, which runs 6 s under 2 s).
add_test(NAME liveness.kernel_60s COMMAND fedcl_e2e_tests --gtest_filter=Liveness.ALongKernelOnAHealthyDaemonIsNotMistakenForADeadOne)
set_tests_properties(liveness.kernel_60s PROPERTIES LABELS long TIMEOUT 300
  ENVIRONMENT "${FEDCL_TEST_ENVIRONMENT};FEDCL_TEST_LONG_KERNEL_SECONDS=60")

# Unmodified OpenCL programs in front of fedcl: clinfo and a PyOpenCL script.
add_executable(fedcl_tool_tests tools/clinfo_test.cpp tools/pyopencl_test.cpp)
target_compile_definitions(fedcl_tool_tests PRIVATE
  PYOPENCL_SCRIPT="${CMAKE_CURRENT_SOURCE_DIR}/tools/pyopencl_check.py"
  FEDCL_VENDORS_DIR="${PROJECT_BINARY_DIR}/vendors")
target_link_libraries(fedcl_tool_tests PRIVATE fedcl_test_support GTest::gtest_main)
fedcl_discover_tests(fedcl_tool_tests tools)
add_test(NAME tools.trace_report COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/trace_report_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(tools.trace_report PROPERTIES LABELS tools TIMEOUT 120)

add_subdirectory(fuzz)

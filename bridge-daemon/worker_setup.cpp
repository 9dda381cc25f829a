#include "worker_setup.h"

namespace fedcld {

void worker_setup_fill(fedcl::wire::WorkerSetup::Builder out, const DaemonSettings &settings, const std::string &node,
                       uint64_t instance) {
  const ServerOptions &options = settings.server;
  out.setLogLevel(uint8_t(settings.log_level));
  out.setNode(node);
  out.setInstance(instance);
  out.setPlatform(settings.selection.platform);
  auto devices = out.initDevices(settings.selection.devices.size());
  for (size_t i = 0; i < settings.selection.devices.size(); i++) devices.set(i, settings.selection.devices[i]);
  out.setKernelNameGuard(settings.kernel_name_guard);
  out.setStageBufferRanges(int8_t(settings.stage_buffer_ranges));
  out.setTransferWindow(settings.transfer_window);
  out.setWriteBufferContents(int8_t(settings.write_buffer_contents));
  out.setMaxSessionMemory(options.max_session_memory);
  out.setCompletion(uint8_t(options.completion));
  out.setPeerTimeoutMs(options.peer_timeout_ms);
  out.setPeerAhead(options.peer_ahead_bytes);
  out.setResumeWindowMs(options.resume_window_ms);
  out.setBusyPollUs(options.busy_poll_us);
  out.setPageLockedReads(uint8_t(options.page_locked_reads));
  out.setPeerAddress(options.peer_address);
  out.setTraceFile(settings.trace_file);
  out.setOpenFiles(options.session_open_files);
  out.setSandbox(options.sandbox);
  out.setHost(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(options.host_identity.data()), options.host_identity.size()));
  out.setLocalSocket(options.local_socket);
}

DaemonSettings worker_setup_read(fedcl::wire::WorkerSetup::Reader setup) {
  DaemonSettings settings;
  ServerOptions &options = settings.server;
  settings.log_level = LogLevel(setup.getLogLevel() <= uint8_t(LogLevel::debug) ? setup.getLogLevel() : uint8_t(LogLevel::info));
  options.node = setup.getNode();
  settings.selection.platform = setup.getPlatform();
  for (uint32_t device : setup.getDevices()) settings.selection.devices.push_back(device);
  settings.kernel_name_guard = long(setup.getKernelNameGuard());
  settings.stage_buffer_ranges = setup.getStageBufferRanges();
  settings.transfer_window = setup.getTransferWindow();
  settings.write_buffer_contents = setup.getWriteBufferContents();
  options.max_session_memory = setup.getMaxSessionMemory();
  options.completion = CompletionMode(setup.getCompletion());
  options.peer_timeout_ms = setup.getPeerTimeoutMs();
  options.peer_ahead_bytes = setup.getPeerAhead();
  options.resume_window_ms = setup.getResumeWindowMs();
  options.busy_poll_us = long(setup.getBusyPollUs());
  options.page_locked_reads = PageLockedReads(setup.getPageLockedReads());
  options.peer_address = setup.getPeerAddress();
  settings.trace_file = setup.getTraceFile();
  options.session_open_files = setup.getOpenFiles();
  options.sandbox = setup.getSandbox();
  auto host = setup.getHost();
  options.host_identity.assign(reinterpret_cast<const char *>(host.begin()), host.size());
  options.local_socket = setup.getLocalSocket();
  return settings;
}

}  // namespace fedcld

// fedcld's options. One table serves the command line (`--name value`) and the configuration file
// (`name = value`, config_file.h): an option added to the table exists in both, with one parser and
// one help text. The command line wins over the file.
#pragma once

#include <string>
#include <vector>

#include "backend.h"
#include "log.h"
#include "server.h"

namespace fedcld {

// Everything the options decide.
struct DaemonSettings {
  ServerOptions server;
  BackendSelection selection;
  LogLevel log_level = LogLevel::info;
  std::string port_file;
  std::string trace_file;   // --trace: hand-off times written here at exit
  std::string metrics_host;  // --metrics: where Prometheus scrapes; "" off
  int metrics_port = 0;
  long kernel_name_guard = -1;  // --kernel-name-guard: BackendPlatform::safe_kernel_name_length; -1: by vendor
  int stage_buffer_ranges = -1;  // --stage-buffer-ranges: BackendPlatform::maps_parts_wrongly; -1: by vendor
  int write_buffer_contents = -1;  // --write-buffer-contents: BackendPlatform::uploads_host_copies_late; -1: by vendor
  int64_t transfer_window = -1;  // --transfer-window: BackendPlatform::transfer_window; -1: by vendor
  bool list_only = false;
  bool help = false;
  std::vector<std::string> warnings;  // what the administrator should fix, logged at every start
};

struct DaemonOption {
  const char *name;         // without "--"; also the option's name in the file
  const char *value;        // how the help names its value; nullptr: a flag that takes none
  const char *help;         // may span lines ('\n')
  bool in_file;             // false: command line only (what makes sense for one run)
  // Applies value to settings; returns "" or why the value is refused.
  std::string (*apply)(const std::string &value, DaemonSettings &settings);
};

const std::vector<DaemonOption> &daemon_options();
const DaemonOption *find_daemon_option(const std::string &name);
std::string daemon_usage();

// The configuration file read when --config names none (read only if it exists).
extern const char kDefaultDaemonConfig[];

// Reads argv (and the configuration file it names, or the default one) into settings, then checks
// what no single option can (daemon_settings_check). Returns every problem found, each naming where
// ("FILE:LINE: " or "--option: ") and why; empty when all is well.
std::vector<std::string> load_daemon_settings(int argc, char **argv, DaemonSettings &settings);
// The rules between options, once all are read: a daemon that other machines reach needs a key
// (unless allow-unauthenticated says otherwise), and the daemons' key defaults to --key-file's, with a
// warning. Problems are appended; warnings go to settings.warnings.
void daemon_settings_check(DaemonSettings &settings, std::vector<std::string> &problems);
// Whether host (numeric, as --listen takes it) is a loopback address, which only this machine reaches.
bool loopback_host(const std::string &host);
// The same for a configuration file's text alone (what load_daemon_settings does with the file).
std::vector<std::string> apply_daemon_config(const std::string &text, const std::string &source,
                                             DaemonSettings &settings);

}  // namespace fedcld

// phalanxd: the Phalanx scheduling daemon. See docs/daemon.md and config/phalanxd.example.yaml.
#include <iostream>

#include "service/daemon.h"
#include "service/daemon_config.h"

int main(int argc, char** argv) {
  using namespace phalanx::service;
  bool help = false;
  auto config = ConfigFromArgs(argc, argv, &help);
  if (!config) {
    std::cerr << "phalanxd: " << config.error().ToString() << "\n";
    return 2;
  }
  if (help) {
    std::cout << DaemonUsage();
    return 0;
  }
  Daemon::Options options;
  options.handle_signals = true;
  auto daemon = Daemon::Start(*config, options);
  if (!daemon && daemon.error().message == kStoppedInStandby) {
    std::cerr << "phalanxd: " << kStoppedInStandby << "\n";
    return 0;
  }
  if (!daemon) {
    std::cerr << "phalanxd: " << daemon.error().ToString() << "\n";
    return 1;
  }
  const auto fatal = (*daemon)->Wait();
  (*daemon)->Stop();
  if (fatal) {
    std::cerr << "phalanxd: stopped after a fatal error: " << *fatal << "\n";
    return 1;
  }
  return 0;
}

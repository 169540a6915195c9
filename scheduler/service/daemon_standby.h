// phalanxd's start on a shared store (PostgreSQL): take the leadership lease, or stand by until
// it lapses (docs/deployment.md, "High availability").
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "adapters/store/store.h"
#include "core/common/result.h"
#include "service/daemon_config.h"

namespace phalanx::service {

// Takes the store's leadership; while another phalanxd holds it, stands by (store.standby):
// serves refusals on every listener (StandbyGate, with these credentials) and tries again every
// lease_renew, until the lease lapses and this one takes over, or a signal stops it
// (kStoppedInStandby, daemon.h).
Result<store::LeaderLease> LeadOrStandBy(store::Store& store, const std::string& holder, const DaemonConfig& config,
                                         const std::shared_ptr<grpc::ServerCredentials>& agent_creds,
                                         const std::shared_ptr<grpc::ServerCredentials>& users_tcp_creds,
                                         bool handle_signals);

}  // namespace phalanx::service

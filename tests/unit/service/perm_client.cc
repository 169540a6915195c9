// A user client for the permission test: run as another user (the test forks, setuid()s to
// nobody and execs this), it tries what that user may and may not do to a job of root's and
// prints one "name=code" per call (gRPC status codes) on one line.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>

#include "phalanx/v1/phalanx.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: perm_client SOCKET JOB_ID\n";
    return 2;
  }
  namespace v1 = phalanx::v1;
  auto channel = grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials());
  auto jobs = v1::Jobs::NewStub(channel);
  auto cluster = v1::Cluster::NewStub(channel);
  const uint64_t id = std::stoull(argv[2]);
  std::string out;
  const auto note = [&](const char* name, const grpc::Status& st) {
    out += std::string(name) + "=" + std::to_string(st.error_code()) + " ";
  };
  {
    grpc::ClientContext ctx;
    v1::CancelRequest req;
    req.set_job_id(id);
    v1::CancelResponse resp;
    note("cancel", jobs->Cancel(&ctx, req, &resp));
  }
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(id);
    req.set_include_env(true);
    v1::Job job;
    note("env", jobs->Get(&ctx, req, &job));
  }
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    auto st = jobs->Get(&ctx, req, &job);
    note("get", st);
    out += "get_env_size=" + std::to_string(job.spec().env_size()) + " owner=" + job.user() + " ";
  }
  {
    grpc::ClientContext ctx;
    v1::JobRef req;
    req.set_job_id(id);
    v1::Job job;
    note("hold", jobs->Hold(&ctx, req, &job));
  }
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    v1::ListJobsResponse resp;
    note("list", jobs->List(&ctx, req, &resp));
    out += "listed=" + std::to_string(resp.jobs_size()) + " ";
  }
  {
    grpc::ClientContext ctx;
    v1::NodeRequest req;
    req.set_node("node0");
    v1::Node node;
    note("drain", cluster->DrainNode(&ctx, req, &node));
  }
  uint64_t own = 0;
  {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("/bin/true");
    v1::SubmitResponse resp;
    note("submit", jobs->Submit(&ctx, req, &resp));
    own = resp.job_id();
  }
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(own);
    v1::Job job;
    (void)jobs->Get(&ctx, req, &job);
    out += "own_user=" + job.user() + " own_uid=" + std::to_string(job.uid()) + " ";
  }
  {
    grpc::ClientContext ctx;
    v1::CancelRequest req;
    req.set_job_id(own);
    v1::CancelResponse resp;
    note("cancel_own", jobs->Cancel(&ctx, req, &resp));
  }
  std::cout << out << std::endl;
  return 0;
}

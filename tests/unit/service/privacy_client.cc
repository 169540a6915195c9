// A user client for the privacy and access tests: run as another user (the test forks,
// setuid()s and execs this), it makes one call and prints one line: "code=N" (the gRPC status
// code) and what the call answered.
//   privacy_client SOCKET get ID [env]       user= name= account= script= args= env= cwd= out= err= hidden=
//   privacy_client SOCKET list [USER]        jobs=ID:user:script,...
//   privacy_client SOCKET submit CLASS ACCOUNT   a job with secrets in its script, args, env, cwd
//   privacy_client SOCKET update ID CLASS
//   privacy_client SOCKET cancel ID
//   privacy_client SOCKET watch [ID]          the first event (an initial state)
// A message follows as msg=... (the rest of the line).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>
#include <string>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace v1 = phalanx::v1;

namespace {

std::string Describe(const v1::Job& j) {
  std::string args, env, hidden;
  for (const std::string& a : j.spec().command()) args += (args.empty() ? "" : ",") + a;
  for (const auto& [k, v] : j.spec().env()) env += (env.empty() ? "" : ",") + k + "=" + v;
  for (const std::string& h : j.hidden_fields()) hidden += (hidden.empty() ? "" : ",") + h;
  return "user=" + j.user() + " uid=" + std::to_string(j.uid()) + " name=" + j.spec().name() +
         " account=" + j.spec().account() + " class=" + j.spec().priority_class() + " script=" + j.spec().script() +
         " args=" + args + " env=" + env + " cwd=" + j.spec().working_dir() + " out=" + j.spec().stdout_pattern() +
         " err=" + j.spec().stderr_pattern() + " hidden=" + hidden;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: privacy_client SOCKET get|list|submit|update|cancel ARGS...\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials());
  auto jobs = v1::Jobs::NewStub(channel);
  const std::string cmd = argv[2];
  const auto arg = [&](int i) { return i < argc ? std::string(argv[i]) : std::string(); };
  grpc::ClientContext ctx;
  grpc::Status st;
  std::string out;
  if (cmd == "get") {
    v1::GetJobRequest req;
    req.set_job_id(std::stoull(arg(3)));
    req.set_include_env(arg(4) == "env");
    v1::Job job;
    st = jobs->Get(&ctx, req, &job);
    out = Describe(job);
  } else if (cmd == "list") {
    v1::ListJobsRequest req;
    req.set_user(arg(3));
    v1::ListJobsResponse resp;
    st = jobs->List(&ctx, req, &resp);
    out = "jobs=";
    for (const v1::Job& j : resp.jobs())
      out += std::to_string(j.id()) + ":" + j.user() + ":" + j.spec().script() + ":" + j.spec().name() + ",";
  } else if (cmd == "submit") {
    v1::SubmitRequest req;
    v1::JobSpec* s = req.mutable_spec();
    s->set_name("secret-run");
    s->set_gpus(1);
    s->set_priority_class(arg(3) == "-" ? "" : arg(3));
    s->set_account(arg(4) == "-" ? "" : arg(4));
    s->set_script("#!/bin/sh\nwandb login $WANDB_API_KEY\n");
    s->add_command("--token=hunter2");
    (*s->mutable_env())["WANDB_API_KEY"] = "wk-123";
    s->set_working_dir("/srv/private/alice");
    s->set_stdout_pattern("/srv/private/alice/%j.out");
    s->set_stderr_pattern("/srv/private/alice/%j.err");
    v1::SubmitResponse resp;
    st = jobs->Submit(&ctx, req, &resp);
    out = "id=" + std::to_string(resp.job_id());
  } else if (cmd == "update") {
    v1::UpdateJobRequest req;
    req.set_job_id(std::stoull(arg(3)));
    req.set_priority_class(arg(4));
    v1::Job job;
    st = jobs->Update(&ctx, req, &job);
    out = "class=" + job.spec().priority_class();
  } else if (cmd == "watch") {  // the first event (send_initial), or the stream's status
    v1::WatchRequest req;
    if (!arg(3).empty()) req.set_job_id(std::stoull(arg(3)));
    req.set_send_initial(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = jobs->Watch(&ctx, req);
    v1::JobEvent ev;
    if (stream->Read(&ev)) {
      out = "kind=" + ev.kind() + " " + Describe(ev.job());
      ctx.TryCancel();
      (void)stream->Finish();
    } else {
      st = stream->Finish();
    }
  } else if (cmd == "cancel") {
    v1::CancelRequest req;
    req.set_job_id(std::stoull(arg(3)));
    v1::CancelResponse resp;
    st = jobs->Cancel(&ctx, req, &resp);
  } else {
    std::cerr << "privacy_client: unknown command " << cmd << "\n";
    return 2;
  }
  std::cout << "code=" << st.error_code() << " " << out << " msg=" << st.error_message() << std::endl;
  return 0;
}

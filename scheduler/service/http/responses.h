// Response helpers for the daemon's endpoints: protobuf messages as JSON (the API's proto3 JSON
// mapping), error JSON, plain text, and a registry's metrics.
// Thread-safety: none needed (no state); MetricsResponse as MetricsRegistry::Render.
#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "service/http/metrics.h"
#include "service/http/request.h"

namespace phalanx::http {

// `message` in the proto3 JSON mapping (google::protobuf::util::MessageToJsonString) with
// proto field names (snake_case: "job_id", not "jobId") and every scalar field printed, also
// at its default (0, false, ""), so clients see one stable shape. As the mapping says, 64-bit
// integers are JSON strings ("id": "42") and enums are names ("JOB_STATE_RUNNING"). Status
// `status`, content type application/json. A message that cannot be printed gets 500.
Response JsonResponse(const google::protobuf::Message& message, int status = 200);

// {"error": "<message>"} with `status` (the message JSON-escaped; invalid UTF-8 replaced).
Response ErrorResponse(int status, std::string_view message);

// `text` as text/plain; charset=utf-8.
Response TextResponse(int status, std::string text);

// 200 with registry.Render() as text/plain; version=0.0.4 (runs the registry's collectors).
Response MetricsResponse(MetricsRegistry& registry);

}  // namespace phalanx::http

#include "service/http/responses.h"

#include <utility>

#include <google/protobuf/util/json_util.h>

#include "util/json.h"

namespace phalanx::http {

Response JsonResponse(const google::protobuf::Message& message, int status) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  Response out;
  auto printed = google::protobuf::util::MessageToJsonString(message, &out.body, options);
  if (!printed.ok()) {
    return ErrorResponse(500, "cannot print " + message.GetTypeName() + " as JSON: " + std::string(printed.message()));
  }
  out.status = status;
  out.content_type = "application/json";
  return out;
}

Response ErrorResponse(int status, std::string_view message) {
  Response out;
  out.status = status;
  out.content_type = "application/json";
  out.body = "{\"error\":" + JsonQuote(message) + "}";
  return out;
}

Response TextResponse(int status, std::string text) {
  Response out;
  out.status = status;
  out.body = std::move(text);
  return out;
}

Response MetricsResponse(MetricsRegistry& registry) {
  Response out;
  out.content_type = std::string(kPrometheusContentType);
  out.body = registry.Render();
  return out;
}

}  // namespace phalanx::http

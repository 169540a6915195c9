// The dashboard's static files, embedded at build time (embed.cmake turns scheduler/web/'s
// files into a table): phalanxd serves them at / and /static/NAME; the simulator's report
// inlines chart.js. ETags are strong: the first 16 hex digits of the file's SHA-256, quoted.
// Thread-safety: constant data.
#pragma once

#include <span>
#include <string_view>

namespace phalanx::web {

struct WebAsset {
  std::string_view name;  // "index.html", "chart.js", ...
  std::string_view content_type;
  std::string_view body;
  std::string_view etag;  // "\"0123456789abcdef\""
};

std::span<const WebAsset> WebAssets();
// The file `name`, or null.
const WebAsset* FindWebAsset(std::string_view name);

}  // namespace phalanx::web

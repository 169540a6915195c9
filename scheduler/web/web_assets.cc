#include "web/web_assets.h"

namespace phalanx::web {

const WebAsset* FindWebAsset(std::string_view name) {
  for (const WebAsset& a : WebAssets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace phalanx::web

#include "adapters/slurm/slurm_tres.h"

namespace phalanx::slurm {
namespace {

// The number after the last ':' or '=' of `item` (before any "(...)"), if the item is a GPU.
uint32_t GpuCount(std::string_view item, std::string_view prefix) {
  if (!item.starts_with(prefix)) return 0;
  item.remove_prefix(prefix.size());
  if (const size_t paren = item.find('('); paren != std::string_view::npos) item = item.substr(0, paren);
  if (item.empty() || (item[0] != ':' && item[0] != '=')) return 0;
  const size_t sep = item.find_last_of(":=");
  const std::string_view count = item.substr(sep + 1);
  uint32_t n = 0;
  for (char c : count) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<uint32_t>(c - '0');
    if (n > (1u << 24)) return 0;
  }
  return n;
}

template <typename F>
uint32_t SumItems(std::string_view list, F count) {
  uint32_t total = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(",;", start);
    if (end == std::string_view::npos) end = list.size();
    total += count(list.substr(start, end - start));
    start = end + 1;
  }
  return total;
}

}  // namespace

uint32_t GpusInTres(std::string_view tres) {
  return SumItems(tres, [](std::string_view item) {
    const uint32_t a = GpuCount(item, "gres:gpu");
    return a != 0 ? a : GpuCount(item, "gres/gpu");
  });
}

uint32_t GpusInGres(std::string_view gres) {
  // "gpu:h100:4(S:0),gpu:a100:4": split on ',' only outside parentheses.
  uint32_t total = 0;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    const char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth <= 0) {
      total += GpuCount(gres.substr(start, i - start), "gpu");
      start = i + 1;
    }
  }
  return total;
}

}  // namespace phalanx::slurm

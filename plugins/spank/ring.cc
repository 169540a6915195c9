#include "ring.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/numbers.h"
#include "util/strings.h"

namespace {

using phalanx::ParseNumber;
using phalanx::Split;
using phalanx::Trim;

int Fail(char* err, size_t errlen, const std::string& message) {
  if (errlen > 0) std::snprintf(err, errlen, "%s", message.c_str());
  return -1;
}

// GB/s one hop over a link gives a ring: line rate x the core's efficiency for its type
// (ModelParams). NV<n>: n NVLinks of 25 GB/s; PIX/PXB: PCIe 4.0 x16 through one or more
// switches; PHB/NODE: through the host bridge / between bridges of one CPU; SYS: across CPUs.
double HopBandwidth(std::string_view t) {
  if (t.size() > 2 && t.substr(0, 2) == "NV") {
    auto n = ParseNumber<unsigned>(t.substr(2));
    if (n && *n > 0) return *n * 25.0 * 0.80;
  }
  if (t == "PIX") return 32.0 * 0.75;
  if (t == "PXB") return 30.0 * 0.75;
  if (t == "PHB") return 26.0 * 0.75;
  if (t == "NODE") return 24.0 * 0.75;
  if (t == "SYS") return 32.0 * 0.60 * 0.9;  // 17.3: below every PCIe path of one CPU
  return -1;
}

// Whitespace-separated fields (nvidia-smi separates with tabs and pads with blanks).
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<unsigned> GpuName(std::string_view f) {
  if (f.size() < 4 || f.substr(0, 3) != "GPU") return std::nullopt;
  return ParseNumber<unsigned>(f.substr(3));
}

struct Matrix {
  std::vector<unsigned> index;          // GPU index of row/column k
  std::vector<std::vector<double>> bw;  // hop bandwidth between rows
};

int ParseMatrix(std::string_view text, Matrix* m, char* err, size_t errlen) {
  std::vector<std::string_view> lines = Split(text, '\n');
  size_t header = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    auto f = Fields(lines[i]);
    if (!f.empty() && GpuName(f[0])) {
      header = i;
      break;
    }
  }
  if (header == lines.size()) return Fail(err, errlen, "gpu_topology: no header line with GPU0 ...");
  for (std::string_view f : Fields(lines[header])) {
    auto g = GpuName(f);
    if (!g) break;  // NIC0, CPU Affinity, ...
    m->index.push_back(*g);
  }
  const size_t n = m->index.size();
  m->bw.assign(n, std::vector<double>(n, 0));
  size_t rows = 0;
  for (size_t i = header + 1; i < lines.size() && rows < n; ++i) {
    auto f = Fields(lines[i]);
    if (f.empty()) continue;
    auto g = GpuName(f[0]);
    if (!g) continue;
    const std::string where = "gpu_topology line " + std::to_string(i + 1);
    if (*g != m->index[rows]) return Fail(err, errlen, where + ": expected GPU" + std::to_string(m->index[rows]));
    if (f.size() < n + 1) return Fail(err, errlen, where + ": fewer than " + std::to_string(n) + " columns");
    for (size_t c = 0; c < n; ++c) {
      if (c == rows) {
        if (f[c + 1] != "X") return Fail(err, errlen, where + ": expected X on the diagonal");
        continue;
      }
      const double b = HopBandwidth(f[c + 1]);
      if (b < 0) return Fail(err, errlen, where + ": unknown link '" + std::string(f[c + 1]) + "'");
      m->bw[rows][c] = b;
    }
    ++rows;
  }
  if (rows < n) return Fail(err, errlen, "gpu_topology: " + std::to_string(n - rows) + " GPU rows missing");
  return 0;
}

bool ParseList(std::string_view text, std::vector<std::string>* out) {
  for (std::string_view part : Split(text, ',')) {
    part = Trim(part);
    if (part.empty()) return false;
    out->emplace_back(part);
  }
  return !out->empty();
}

}  // namespace

extern "C" int phx_ring_order(const char* matrix, const char* visible, const char* gpus, char* out, size_t outlen,
                              char* err, size_t errlen) {
  try {
    Matrix m;
    if (ParseMatrix(matrix ? matrix : "", &m, err, errlen) < 0) return -1;
    std::vector<std::string> vis, node;
    if (!ParseList(visible ? visible : "", &vis))
      return Fail(err, errlen, "CUDA_VISIBLE_DEVICES '" + std::string(visible ? visible : "") + "' is not a list");
    if (gpus == nullptr || gpus[0] == '\0') node = vis;
    else if (!ParseList(gpus, &node)) return Fail(err, errlen, "GPU list '" + std::string(gpus) + "' is not a list");
    if (node.size() != vis.size())
      return Fail(err, errlen,
                  "CUDA_VISIBLE_DEVICES has " + std::to_string(vis.size()) + " GPUs, the GPU list " +
                      std::to_string(node.size()));
    const size_t n = vis.size();
    std::vector<size_t> row(n);  // matrix row of each GPU
    for (size_t k = 0; k < n; ++k) {
      auto g = ParseNumber<unsigned>(node[k]);
      auto it = g ? std::find(m.index.begin(), m.index.end(), *g) : m.index.end();
      if (it == m.index.end()) return Fail(err, errlen, "GPU " + node[k] + " is not in gpu_topology");
      row[k] = static_cast<size_t>(it - m.index.begin());
      for (size_t j = 0; j < k; ++j) {
        if (row[j] == row[k]) return Fail(err, errlen, "GPU " + node[k] + " is listed twice");
      }
    }
    std::vector<size_t> best(n);
    std::iota(best.begin(), best.end(), 0);
    if (n > 2 && n <= 10) {
      auto score = [&](const std::vector<size_t>& p) {
        double lo = 1e300, sum = 0;
        for (size_t k = 0; k < n; ++k) {
          const double b = m.bw[row[p[k]]][row[p[(k + 1) % n]]];
          lo = std::min(lo, b);
          sum += b;
        }
        return std::pair{lo, sum};
      };
      std::vector<size_t> p = best;
      auto top = score(p);
      // The first GPU stays first (a ring has no start); permutations come in lexicographic
      // order, so the earliest best one in Slurm's order is kept.
      while (std::next_permutation(p.begin() + 1, p.end())) {
        auto s = score(p);
        if (s.first > top.first + 1e-9 || (s.first > top.first - 1e-9 && s.second > top.second + 1e-9)) {
          top = s;
          best = p;
        }
      }
    }
    std::string text;
    for (size_t k = 0; k < n; ++k) text += (k ? "," : "") + vis[best[k]];
    if (text.size() >= outlen) return Fail(err, errlen, "output buffer too small");
    std::memcpy(out, text.c_str(), text.size() + 1);
    return 0;
  } catch (const std::bad_alloc&) {
    return Fail(err, errlen, "out of memory");
  }
}

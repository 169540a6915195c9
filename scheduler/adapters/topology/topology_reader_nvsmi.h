// `nvidia-smi topo -m` output -> NodeModel (the inside of one node).
//
// Input: the matrix as nvidia-smi prints it: a header row of device columns (GPU0..GPUn-1 in
// order, then NICs: NIC0.. or mlx5_*), then informational columns (CPU Affinity, NUMA Affinity,
// GPU NUMA ID), one row per device in header order, then the legend, which is ignored.
// Columns may be separated by tabs or spaces. Cells: X (self), NV# (# bonded NVLinks), PIX,
// PXB, PHB, NODE, SYS (SOC, its old name, is accepted).
//
// Groups (how the matrix becomes a group tree):
//   * NVLink: GPUs joined by NV# cells form NVLink islands (connected components). An island of
//     n >= 3 GPUs where every pair shows the same NV# = k with k * (n-1) > max_gpu_nvlinks is
//     behind an NVSwitch (no GPU has that many links to spend on direct peers): one "nvswitch"
//     group, each GPU's link = k * link_gbs (DGX H100: NV18 -> 18 * 25 = 450 GB/s). Any other
//     island (bridged pairs, quads, hybrid cube meshes) is one "nvlink" group whose GPU link is
//     the smallest per-GPU NVLink total inside it times link_gbs (NV4 pair: 4 * link_gbs).
//   * PCIe/NUMA: islands and lone GPUs are then clustered by their PCIe distance (the closest
//     pair between two islands counts), single-linkage: sets that stay apart at NODE distance
//     are NUMA sockets ("numa" groups, uplink smp_gbs), and within them sets joined at PIX, PXB
//     or PHB distance are "pcie" groups (uplink pcie_gbs). A level that does not split its set
//     adds no group. A lone GPU's link is pcie_gbs. When the top level mixes groups and lone
//     GPUs, each lone GPU gets its own one-GPU group, since a model's groups must cover every GPU.
//   * A group's `numa` is its GPUs' common NUMA Affinity when they agree, else (numa groups) the
//     socket's ordinal.
// NICs: `nics` < 0 counts the rail NICs: NIC columns at PIX or PXB distance from some GPU
// (GPUDirect-capable; storage/management NICs further away are left out); if no NIC is that
// close, every NIC column counts. Each NIC is nic_gbs (default NDR, 50 GB/s).
//
// Fails, naming "file:line" and the offending cell or row: no header row, GPU columns out of
// order or missing, device columns after the informational ones, a row whose label is not the
// matching header column (row/column GPU count mismatch), a row with too few or too many
// matrix cells (non-square matrix), an unknown cell token, X off the diagonal or not on it, an
// asymmetric pair of cells, a text that ends before every device row was read (truncated), and
// bad options ("options.<field>").
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

struct NvsmiOptions {
  std::string model_name = "nvsmi-node";
  // GB/s per direction of one NVLink: 25 for NVLink 3 (A100) and NVLink 4 (H100); NVLink
  // bridges of PCIe cards (A40, A6000, L40 has none) run about 14.
  double link_gbs = 25;
  double pcie_gbs = 32;      // PCIe Gen4 x16 per direction (node_models.cc: kPcie4)
  double smp_gbs = 40;       // socket interconnect usable by GPU peer traffic (kSmp)
  int nics = -1;             // < 0: count rail NICs from the matrix (see above)
  double nic_gbs = 50;       // per NIC: NDR 400 Gb/s
  int max_gpu_nvlinks = 18;  // most NVLinks one GPU has (H100: 18); drives NVSwitch detection
};

Result<NodeModel> ReadNvidiaSmiTopo(std::string_view text, std::string_view filename, const NvsmiOptions& options);

}  // namespace phalanx

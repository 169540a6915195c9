/* The order of a step's GPUs along the ring the bandwidth model predicts best (docs/slurm.md,
 * "GPU order"): NCCL builds its ring in CUDA_VISIBLE_DEVICES order, so the plugin puts GPUs
 * joined by NVLink (then the same PCIe switch, the same CPU) next to each other.
 *
 * The node's links come from `nvidia-smi topo -m`'s matrix (a file per node, plugstack.conf
 * `gpu_topology=`). A ring's predicted bandwidth is its slowest hop (ring all-reduce: every hop
 * carries the same traffic), each hop worth its link's line rate times the core's efficiency for
 * that link type (scheduler/core/placement/bandwidth_model.h's ModelParams: NVLink 0.80, PCIe
 * 0.75, CPU interconnect 0.60); among rings with the same slowest hop, the larger sum of hop
 * bandwidths wins (fewer slow hops), then the earliest in Slurm's order (nothing moves
 * without a reason). Up to 10 GPUs every ring is tried; more keep Slurm's order.
 * Pure functions, no I/O. Thread-safety: reentrant. */
#ifndef PHALANX_SPANK_RING_H
#define PHALANX_SPANK_RING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `matrix`: the text of `nvidia-smi topo -m` (GPU rows and columns; NIC rows, CPU/NUMA
 * affinity columns and the legend are skipped). `visible`: CUDA_VISIBLE_DEVICES as Slurm set it;
 * `gpus`: the node's GPU indices it stands for, in the same order (SLURM_STEP_GPUS or
 * SLURM_JOB_GPUS; NULL or "": the same as `visible`, i.e. no device cgroup renumbering).
 * Writes the reordered `visible` into out (outlen bytes). 0, or -1 and `err`: a matrix that
 * does not parse (naming its line), an index not in the matrix, lists of different lengths. */
int phx_ring_order(const char* matrix, const char* visible, const char* gpus, char* out, size_t outlen, char* err,
                   size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PHALANX_SPANK_RING_H */

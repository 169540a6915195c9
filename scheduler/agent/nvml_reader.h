// Reads the GPUs of this node through NVML, loaded with dlopen at run time (the agent neither
// links nor needs the driver; the few NVML prototypes and structs it uses are declared in
// nvml_reader.cc). Per GPU: UUID, name, memory, PCI address and NVLink peers. A GPU whose
// active links lead to a device that is not a local GPU (an NVSwitch) is a peer of every other
// such GPU. NUMA affinity is not NVML's business (gpu_discovery.cc asks hwloc).
// Thread-safety: thread-safe (NVML is); each call does nvmlInit_v2 ... nvmlShutdown.
#pragma once

#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/common/result.h"

namespace phalanx::agent {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// Fails naming the library and the failed call: the library cannot be loaded ("dlopen: ...
// cannot open shared object file"), a required symbol is missing, or an NVML call fails.
Result<std::vector<GpuDevice>> ReadNvmlGpus(const std::string& library);

}  // namespace phalanx::agent

#include "agent/nvml_reader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

namespace phalanx::agent {
namespace {

// The subset of nvml.h the agent uses (ABI-stable since CUDA 10 / driver r410).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
constexpr unsigned kUuidSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kNameSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*);                        // optional
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*);                 // optional
  nvmlReturn_t (*link_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*);  // optional
};

template <typename F>
bool Bind(void* lib, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
  return *out != nullptr;
}

struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

PciAddress FromPci(const nvmlPciInfo_t& pci) {
  PciAddress a{pci.domain, pci.bus, pci.device, 0};
  const char* dot = static_cast<const char*>(std::memchr(pci.busId, '.', sizeof pci.busId));
  if (dot != nullptr && dot[1] >= '0' && dot[1] <= '7') a.function = static_cast<uint32_t>(dot[1] - '0');
  return a;
}

void FindPeers(const Api& api, const std::vector<nvmlDevice_t>& devs, std::vector<GpuDevice>* gpus) {
  if (api.link_state == nullptr || api.link_remote_pci == nullptr) return;
  std::set<uint32_t> switched;  // GPUs with a link to something that is not a local GPU
  for (size_t i = 0; i < devs.size(); ++i) {
    std::set<uint32_t> peers;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = 0;
      if (api.link_state(devs[i], link, &active) != NVML_SUCCESS) continue;
      nvmlPciInfo_t remote{};
      if (active == 0 || api.link_remote_pci(devs[i], link, &remote) != NVML_SUCCESS) continue;
      const PciAddress addr{remote.domain, remote.bus, remote.device, 0};
      auto it = std::find_if(gpus->begin(), gpus->end(), [&](const GpuDevice& g) {
        return g.has_pci && g.pci.domain == addr.domain && g.pci.bus == addr.bus && g.pci.device == addr.device;
      });
      if (it == gpus->end()) {
        switched.insert(static_cast<uint32_t>(i));
      } else if (it->index != i) {
        peers.insert(it->index);
      }
    }
    (*gpus)[i].nvlink_peers.assign(peers.begin(), peers.end());
  }
  for (uint32_t a : switched) {
    std::set<uint32_t> peers((*gpus)[a].nvlink_peers.begin(), (*gpus)[a].nvlink_peers.end());
    for (uint32_t b : switched) {
      if (b != a) peers.insert(b);
    }
    (*gpus)[a].nvlink_peers.assign(peers.begin(), peers.end());
  }
}

}  // namespace

Result<std::vector<GpuDevice>> ReadNvmlGpus(const std::string& library) {
  Library lib;
  lib.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    const char* err = dlerror();
    return Fail("", err != nullptr ? err : library + ": dlopen failed");  // dlerror names the file
  }
  Api api{};
  for (auto [symbol, ok] :
       {std::pair{"nvmlInit_v2", Bind(lib.handle, "nvmlInit_v2", &api.init)},
        {"nvmlShutdown", Bind(lib.handle, "nvmlShutdown", &api.shutdown)},
        {"nvmlDeviceGetCount_v2", Bind(lib.handle, "nvmlDeviceGetCount_v2", &api.count)},
        {"nvmlDeviceGetHandleByIndex_v2", Bind(lib.handle, "nvmlDeviceGetHandleByIndex_v2", &api.handle)},
        {"nvmlDeviceGetUUID", Bind(lib.handle, "nvmlDeviceGetUUID", &api.uuid)},
        {"nvmlDeviceGetName", Bind(lib.handle, "nvmlDeviceGetName", &api.name)},
        {"nvmlDeviceGetMemoryInfo", Bind(lib.handle, "nvmlDeviceGetMemoryInfo", &api.memory)}}) {
    if (!ok) return Fail(library, std::string("missing symbol ") + symbol);
  }
  Bind(lib.handle, "nvmlErrorString", &api.error_string);
  Bind(lib.handle, "nvmlDeviceGetPciInfo_v3", &api.pci);
  Bind(lib.handle, "nvmlDeviceGetNvLinkState", &api.link_state);
  Bind(lib.handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.link_remote_pci);
  auto failed = [&](const char* call, nvmlReturn_t rc) {
    const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    return Fail(library, std::string(call) + ": " + (text != nullptr ? text : "error " + std::to_string(rc)));
  };

  if (nvmlReturn_t rc = api.init(); rc != NVML_SUCCESS) return failed("nvmlInit_v2", rc);
  std::vector<GpuDevice> gpus;
  std::vector<nvmlDevice_t> devs;
  unsigned count = 0;
  nvmlReturn_t rc = api.count(&count);
  if (rc != NVML_SUCCESS) {
    api.shutdown();
    return failed("nvmlDeviceGetCount_v2", rc);
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    char uuid[kUuidSize] = {}, name[kNameSize] = {};
    nvmlMemory_t mem{};
    if ((rc = api.handle(i, &dev)) != NVML_SUCCESS) {
      api.shutdown();
      return failed("nvmlDeviceGetHandleByIndex_v2", rc);
    }
    GpuDevice gpu;
    gpu.index = i;
    if (api.uuid(dev, uuid, kUuidSize) == NVML_SUCCESS) gpu.uuid = uuid;
    if (api.name(dev, name, kNameSize) == NVML_SUCCESS) gpu.name = name;
    if (api.memory(dev, &mem) == NVML_SUCCESS) gpu.memory_bytes = mem.total;
    nvmlPciInfo_t pci{};
    if (api.pci != nullptr && api.pci(dev, &pci) == NVML_SUCCESS) gpu.has_pci = true, gpu.pci = FromPci(pci);
    gpus.push_back(std::move(gpu));
    devs.push_back(dev);
  }
  FindPeers(api, devs, &gpus);
  api.shutdown();
  return gpus;
}

}  // namespace phalanx::agent

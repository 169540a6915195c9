// A stand-in for libnvidia-ml.so.1, dlopen'ed by gpu_discovery_test through
// GpuDiscoveryOptions::nvml_library. Four "H100"s on the PCI addresses of the GPUs of
// tests/fixtures/hwloc/2socket-8gpu-4sw.xml (18:00.0, 19:00.0 on NUMA node 0; 9b:00.0, 9c:00.0
// on NUMA node 1). NVLink: GPU 0 <-> GPU 1 directly (two links); GPUs 2 and 3 each have links
// to an NVSwitch (bus 0xf0, not a GPU); GPU 3 also has an inactive link.
// FAKE_NVML_INIT=<code> makes nvmlInit_v2 fail with that code.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Device {
  unsigned bus;
};
Device g_devices[4] = {{0x18}, {0x19}, {0x9b}, {0x9c}};

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct Memory {
  unsigned long long total, free, used;
};

int Index(void* dev) { return static_cast<int>(static_cast<Device*>(dev) - g_devices); }

void FillPci(PciInfo* pci, unsigned bus) {
  std::memset(pci, 0, sizeof *pci);
  pci->bus = bus;
  std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", bus);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", bus);
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_INIT");
  return fail != nullptr ? std::atoi(fail) : 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 4;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** dev) {
  if (index >= 4) return 2;
  *dev = &g_devices[index];
  return 0;
}
int nvmlDeviceGetUUID(void* dev, char* out, unsigned size) {
  std::snprintf(out, size, "GPU-fake-%d", Index(dev));
  return 0;
}
int nvmlDeviceGetName(void*, char* out, unsigned size) {
  std::snprintf(out, size, "NVIDIA H100 80GB HBM3");
  return 0;
}
int nvmlDeviceGetMemoryInfo(void*, Memory* mem) {
  mem->total = 85899345920ULL;
  mem->free = mem->total;
  mem->used = 0;
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* pci) {
  FillPci(pci, static_cast<Device*>(dev)->bus);
  return 0;
}
int nvmlDeviceGetNvLinkState(void* dev, unsigned link, int* active) {
  const int i = Index(dev);
  const unsigned links = i == 3 ? 3 : 2;
  if (link >= links) return 3;  // NVML_ERROR_NOT_SUPPORTED
  *active = (i == 3 && link == 2) ? 0 : 1;
  return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* dev, unsigned, PciInfo* pci) {
  const int i = Index(dev);
  FillPci(pci, i == 0 ? 0x19 : i == 1 ? 0x18 : 0xf0);
  return 0;
}

}  // extern "C"

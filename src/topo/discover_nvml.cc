// Topology discovery, GPU part: NVML loaded with dlopen (the driver's libnvidia-ml.so.1 is absent on
// machines without an NVIDIA driver, and baton must build and run there), asked for each GPU's
// index and compute capability. NVLink discovery is not done yet: GPUs appear as PCI devices only.
#include <dlfcn.h>

#include <cstdio>

#include "topo/discover_detail.h"

namespace baton {
namespace discover {
namespace {

// The few NVML declarations used, spelled as in nvml.h (the header is not needed to build).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*errorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*byIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*pciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*capability)(nvmlDevice_t, int*, int*) = nullptr;

  template <class F>
  bool load(F* fn, const char* name) {
    *fn = reinterpret_cast<F>(dlsym(lib, name));
    return *fn != nullptr;
  }
  std::string err(nvmlReturn_t r) const { return errorString ? errorString(r) : "error " + std::to_string(r); }
};

}  // namespace

void probeNvml(bool anyGpu, std::map<std::string, GpuInfo>* out, std::string* notes) {
  Nvml n;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) {
    addNote(notes, "NVML: not found (libnvidia-ml.so.1): GPUs from PCI ids only, sm=\"0\"");
    return;
  }
  if (!anyGpu) {
    // nvmlInit costs tens of milliseconds; without an NVIDIA GPU on PCI it would find nothing.
    addNote(notes, "NVML: found, not initialised (no NVIDIA GPU on the PCI bus)");
    dlclose(n.lib);
    return;
  }
  // Older drivers lack the _v3 PCI query; _v2 fills the same structure.
  bool ok = n.load(&n.init, "nvmlInit_v2") && n.load(&n.shutdown, "nvmlShutdown") &&
            n.load(&n.count, "nvmlDeviceGetCount_v2") && n.load(&n.byIndex, "nvmlDeviceGetHandleByIndex_v2") &&
            (n.load(&n.pciInfo, "nvmlDeviceGetPciInfo_v3") || n.load(&n.pciInfo, "nvmlDeviceGetPciInfo_v2")) &&
            n.load(&n.capability, "nvmlDeviceGetCudaComputeCapability");
  n.load(&n.errorString, "nvmlErrorString");
  if (!ok) {
    addNote(notes, "NVML: libnvidia-ml.so.1 lacks a needed symbol: GPUs from PCI ids only");
    dlclose(n.lib);
    return;
  }
  nvmlReturn_t r = n.init();
  if (r != 0) {
    addNote(notes, "NVML: nvmlInit failed (" + n.err(r) + "): GPUs from PCI ids only");
    dlclose(n.lib);
    return;
  }
  unsigned int count = 0;
  if ((r = n.count(&count)) != 0) addNote(notes, "NVML: nvmlDeviceGetCount failed (" + n.err(r) + ")");
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlPciInfo_t pci{};
    int major = 0, minor = 0;
    if (n.byIndex(i, &dev) != 0 || n.pciInfo(dev, &pci) != 0) continue;
    if (n.capability(dev, &major, &minor) != 0) major = minor = 0;
    char busId[32];
    // NVML reports the device's function 0; GPUs are single-function for this purpose.
    snprintf(busId, sizeof busId, "%04x:%02x:%02x.0", pci.domain & 0xffff, pci.bus & 0xff, pci.device & 0x1f);
    (*out)[busId] = GpuInfo{static_cast<int>(i), major * 10 + minor};
  }
  addNote(notes, "NVML: " + std::to_string(count) + " GPU" + (count == 1 ? "" : "s"));
  n.shutdown();
  dlclose(n.lib);
}

}  // namespace discover
}  // namespace baton

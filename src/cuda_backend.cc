// Opens the CUDA backend's plugin at run time, so one libnccl.so.2 serves machines with and without
// CUDA: without a driver or a device the plugin says why and baton stays on the CPU backend.
#include "cuda_backend.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "misc/debug.h"
#include "misc/param.h"
#include "misc/plugin_lib.h"

namespace baton {
namespace {

std::once_flag gOnce;
const CudaBackend* gBackend = nullptr;
std::string gStatus = "not opened";

// libbaton-cuda.so beside the library holding this code (libnccl.so.2, or a program linking the
// archive), else wherever the dynamic loader finds it.
std::string pluginBesideUs() { return besideThisLibrary("libbaton-cuda.so"); }

void open() {
  if (envStr("BATON_CUDA") == "0") {
    gStatus = "BATON_CUDA=0: the CPU backend only";
    return;
  }
  std::string tried;
  void* h = nullptr;
  std::string path = envStr("BATON_CUDA_PLUGIN");
  if (path.empty()) path = pluginBesideUs();
  for (const std::string& p : {path, std::string("libbaton-cuda.so")}) {
    if (p.empty()) continue;
    if ((h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (!h) {
    gStatus = "CUDA backend not loaded (" + tried + ")";
    return;
  }
  using Entry = const CudaBackend* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(h, "batonCudaBackend"));
  const CudaBackend* b = entry ? entry() : nullptr;
  if (!b || b->version != kCudaBackendVersion || b->collArgsBytes != sizeof(CollArgs) ||
      b->execCtxBytes != sizeof(ExecCtx) || b->connDevBytes != sizeof(ConnDev) ||
      b->launchBytes != sizeof(GpuCollLaunch) || b->p2pLaunchBytes != sizeof(GpuP2pLaunch) ||
      b->transferBytes != sizeof(SendRecvTransfer) || b->channelBytes != sizeof(GpuChannelDev)) {
    gStatus = "libbaton-cuda.so was built from other sources than this libnccl.so.2 (version or struct sizes differ)";
    return;
  }
  int n = 0;
  if (b->deviceCount(&n) != 0 || n == 0) {
    gStatus = n == 0 && b->deviceCount(&n) == 0 ? "no CUDA device" : std::string("no CUDA device: ") + b->lastError();
    return;
  }
  gBackend = b;
  gStatus = "CUDA backend loaded: " + std::to_string(n) + " device(s)";
}

}  // namespace

const CudaBackend* cudaBackend() {
  std::call_once(gOnce, open);
  return gBackend;
}

const char* cudaBackendStatus() {
  cudaBackend();
  return gStatus.c_str();
}

bool isDeviceMemory(const void* p) {
  const CudaBackend* b = cudaBackend();
  return b && p && b->isDevicePointer(p) == 1;
}

int currentCudaDevice(char* desc, size_t descBytes) {
  const CudaBackend* b = cudaBackend();
  if (!b) {
    snprintf(desc, descBytes, "%s", cudaBackendStatus());
    return -1;
  }
  int dev = -1;
  return b->probe(&dev, desc, descBytes) == 0 ? dev : -1;
}

ncclResult_t checkHostMemory(const void* p, const char* fn, const char* what) {
  if (p && isDeviceMemory(p))
    return batonError(ncclInvalidUsage,
                      "%s: %s %p is device memory; the CUDA backend does not run this call (host buffers only)", fn,
                      what, p);
  return ncclSuccess;
}

const char* backendsInUse() { return cudaBackend() ? "CPU and CUDA backends" : "CPU backend"; }

}  // namespace baton

// IB back-end, devices: every ACTIVE port of every HCA that NCCL_IB_HCA selects, its properties,
// the RoCE GID to route with, one protection domain per port (refcounted) and the MR cache.
// Protocol and ordering: ib_backend.cc.
#include <endian.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "ib_comm.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {
namespace netib {

namespace {
std::vector<std::unique_ptr<IbDev>> gDevs;
std::string gNoDevice = "no RDMA device (ibv_get_device_list found none)";
IbParams gParams{};
}  // namespace

const IbParams& ibParams() { return gParams; }
int ibDevCount() { return (int)gDevs.size(); }

ncclResult_t ibDevice(const char* op, int dev, IbDev** out) {
  if (gDevs.empty()) return batonError(ncclSystemError, "IB %s: %s", op, gNoDevice.c_str());
  if (dev < 0 || dev >= (int)gDevs.size())
    return batonError(ncclInvalidArgument, "IB %s: device %d out of range (%d devices)", op, dev, (int)gDevs.size());
  *out = gDevs[dev].get();
  return ncclSuccess;
}

bool hcaSelected(const std::string& spec, const std::string& dev, int port) {
  if (spec.empty()) return true;
  std::string list = spec;
  bool exclude = false, exact = false;
  if (!list.empty() && list[0] == '^') exclude = true, list.erase(0, 1);
  if (!list.empty() && list[0] == '=') exact = true, list.erase(0, 1);
  bool hit = false;
  for (size_t pos = 0; pos <= list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos), name = item;
    int itemPort = -1;
    if (size_t colon = item.find(':'); colon != std::string::npos)
      name = item.substr(0, colon), itemPort = atoi(item.c_str() + colon + 1);
    bool nameOk = exact ? dev == name : dev.compare(0, name.size(), name) == 0;
    if (!name.empty() && nameOk && (itemPort < 0 || itemPort == port)) hit = true;
    pos = comma + 1;
  }
  return exclude ? !hit : hit;
}

// IB encodings of active_speed (per-lane rate) and active_width (lane count).
namespace {
int portSpeedMbps(const ibv_port_attr& a) {
  int lane;
  switch (a.active_speed) {
    case 1: lane = 2500; break;  // SDR
    case 2: lane = 5000; break;  // DDR
    case 4:
    case 8: lane = 10000; break;     // QDR, FDR10
    case 16: lane = 14000; break;    // FDR
    case 32: lane = 25000; break;    // EDR
    case 64: lane = 50000; break;    // HDR
    case 128: lane = 100000; break;  // NDR
    default: lane = 2500; break;     // unknown: the slowest, never over-promise
  }
  int lanes = a.active_width == 2    ? 4
              : a.active_width == 4  ? 8
              : a.active_width == 8  ? 12
              : a.active_width == 16 ? 2
                                     : 1;
  return lane * lanes;
}

std::string readLine(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// RoCE routes by GID (an IP address in GID form); IB routes by LID and GID index 0 is enough.
// NCCL_IB_GID_INDEX wins. Otherwise scan the port's GID table for the RoCE version
// NCCL_IB_ROCE_VERSION_NUM (sysfs gid_attrs/types/<i>: "RoCE v2" / "IB/RoCE v1") and take the
// first IPv4-mapped GID (::ffff:a.b.c.d), else the first global IPv6 one, else index 0.
int selectGidIndex(IbDev& d) {
  if (gParams.gidIndex >= 0 || d.attr.link_layer != IBV_LINK_LAYER_ETHERNET)
    return gParams.gidIndex >= 0 ? gParams.gidIndex : 0;
  const std::string base = "/sys/class/infiniband/" + d.devName + "/ports/" + std::to_string(d.port);
  const std::string want = gParams.rocev == 1 ? "v1" : "v2";
  int v6 = -1;
  for (int i = 0; i < d.attr.gid_tbl_len; i++) {
    std::string type = readLine(base + "/gid_attrs/types/" + std::to_string(i));
    if (type.find(want) == std::string::npos) continue;
    ibv_gid g;
    if (ibv_query_gid(d.ctx, d.port, i, &g) != 0) continue;
    static const uint8_t zero[16] = {};
    if (!memcmp(g.raw, zero, 16)) continue;
    static const uint8_t v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(g.raw, v4prefix, 12)) return i;
    bool linkLocal = g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80;
    if (!linkLocal && v6 < 0) v6 = i;
  }
  if (v6 >= 0) return v6;
  BATON_WARN("IB %s: no RoCE %s GID with an IP address (%s/gids); using GID index 0", d.name.c_str(), want.c_str(),
             base.c_str());
  return 0;
}

ncclResult_t addPorts(ibv_device* dev, const std::string& spec) {
  const char* devName = ibv_get_device_name(dev);
  ibv_context* ctx = ibv_open_device(dev);
  if (!ctx) {
    BATON_WARN("IB: ibv_open_device(%s) failed: %s; skipping it", devName, strerror(errno));
    return ncclSuccess;
  }
  ibv_device_attr da{};
  if (int rc = ibv_query_device(ctx, &da)) {
    BATON_WARN("IB: ibv_query_device(%s) failed: %s; skipping it", devName, strerror(rc));
    ibv_close_device(ctx);
    return ncclSuccess;
  }
  int used = 0;
  for (int p = 1; p <= da.phys_port_cnt; p++) {
    auto d = std::make_unique<IbDev>();
    if (int rc = ibv_query_port(ctx, p, &d->attr)) {
      BATON_WARN("IB: ibv_query_port(%s:%d) failed: %s", devName, p, strerror(rc));
      continue;
    }
    if (d->attr.state != IBV_PORT_ACTIVE) continue;
    if (d->attr.link_layer != IBV_LINK_LAYER_INFINIBAND && d->attr.link_layer != IBV_LINK_LAYER_ETHERNET) continue;
    if (!hcaSelected(spec, devName, p)) continue;
    d->devName = devName;
    d->port = p;
    d->name = d->devName + ":" + std::to_string(p);
    d->ctx = ctx;
    d->maxQp = da.max_qp;
    d->guid = be64toh(da.node_guid);
    d->speedMbps = portSpeedMbps(d->attr);
    char real[PATH_MAX];
    std::string sys = "/sys/class/infiniband/" + d->devName + "/device";
    if (realpath(sys.c_str(), real)) d->pciPath = real;
    // GPUDirect RDMA needs a peer-memory module; reported only, this back-end registers host memory.
    if (!access("/sys/kernel/mm/memory_peers/nv_mem", F_OK) || !access("/sys/module/nvidia_peermem", F_OK))
      d->ptrSupport |= kNetPtrCuda;
    d->gidIndex = selectGidIndex(*d);
    if (int rc = ibv_query_gid(ctx, p, d->gidIndex, &d->gid)) {
      BATON_WARN("IB: ibv_query_gid(%s, index %d) failed: %s; skipping the port", d->name.c_str(), d->gidIndex,
                 strerror(rc));
      continue;
    }
    BATON_INFO(kSubNet | kSubInit, "IB: %s %s, %d Mb/s, GID index %d", d->name.c_str(),
               d->attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB", d->speedMbps, d->gidIndex);
    gDevs.push_back(std::move(d));
    used++;
  }
  if (!used) ibv_close_device(ctx);
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    gParams = {(int)envInt("NCCL_IB_TIMEOUT", 20),
               (int)envInt("NCCL_IB_RETRY_CNT", 7),
               (int)envInt("NCCL_IB_SL", 0),
               (int)envInt("NCCL_IB_TC", 0),
               (int)envInt("NCCL_IB_PKEY", 0),
               (int)envInt("NCCL_IB_GID_INDEX", -1),
               (int)envInt("NCCL_IB_ROCE_VERSION_NUM", 2)};
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) {  // no kernel support or no provider: a host without RDMA, not an error
      gNoDevice = errno == ENOSYS ? "no RDMA device (ibv_get_device_list found none: no RDMA support in the kernel)"
                                  : std::string("no RDMA device (ibv_get_device_list failed: ") + strerror(errno) + ")";
      BATON_INFO(kSubNet | kSubInit, "IB: %s", gNoDevice.c_str());
      return;
    }
    const std::string spec = envStr("NCCL_IB_HCA");
    for (int i = 0; i < n; i++) addPorts(list[i], spec);
    ibv_free_device_list(list);
    if (gDevs.empty() && n > 0)
      gNoDevice = "no RDMA device (" + std::to_string(n) + " found, none with an ACTIVE port" +
                  (spec.empty() ? "" : " selected by NCCL_IB_HCA='" + spec + "'") + ")";
    BATON_INFO(kSubNet | kSubInit, "IB: %d port(s)%s%s", (int)gDevs.size(), gDevs.empty() ? ": " : "",
               gDevs.empty() ? gNoDevice.c_str() : "");
  });
  return ncclSuccess;
}

ncclResult_t ibProperties(int dev, NetProperties* props) {
  IbDev* d = nullptr;
  BATON_CHECK(ibDevice("getProperties", dev, &d));
  memset(props, 0, sizeof *props);
  snprintf(props->name, sizeof props->name, "%s", d->name.c_str());
  snprintf(props->pciPath, sizeof props->pciPath, "%s", d->pciPath.c_str());
  props->guid = d->guid;
  props->ptrSupport = d->ptrSupport;
  props->speedMbps = d->speedMbps;
  props->port = d->port;
  props->maxComms = d->maxQp;
  props->maxRecvs = kNetMaxRecvs;
  return ncclSuccess;
}

namespace {
ncclResult_t pdGetLocked(IbDev* d) {
  if (!d->pd && !(d->pd = ibv_alloc_pd(d->ctx)))
    return batonError(ncclSystemError, "IB %s: ibv_alloc_pd failed: %s", d->name.c_str(), strerror(errno));
  d->pdRefs++;
  return ncclSuccess;
}

ncclResult_t pdPutLocked(IbDev* d) {
  if (--d->pdRefs > 0) return ncclSuccess;
  int rc = ibv_dealloc_pd(d->pd);
  d->pd = nullptr;
  if (rc) return batonError(ncclSystemError, "IB %s: ibv_dealloc_pd failed: %s", d->name.c_str(), strerror(rc));
  return ncclSuccess;
}
}  // namespace

ncclResult_t pdGet(IbDev* d) {
  std::lock_guard<std::mutex> lock(d->mu);
  return pdGetLocked(d);
}

ncclResult_t pdPut(IbDev* d) {
  std::lock_guard<std::mutex> lock(d->mu);
  return pdPutLocked(d);
}

// Registrations are whole pages, cached by exact range; each holds a PD reference so a PD outlives
// the comms that registered into it until the last deregMr.
ncclResult_t mrRegister(IbDev* d, void* data, size_t size, int type, IbMr** out) {
  if (!data || size == 0) return batonError(ncclInvalidArgument, "IB regMr: empty buffer (%p, %zu bytes)", data, size);
  if (type != kNetPtrHost && !(type == kNetPtrCuda && (d->ptrSupport & kNetPtrCuda)))
    return batonError(ncclInvalidArgument, "IB regMr on %s: pointer type %d not supported (supported: 0x%x)",
                      d->name.c_str(), type, d->ptrSupport);
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)data & ~(page - 1);
  const uintptr_t end = ((uintptr_t)data + size + page - 1) & ~(page - 1);
  std::lock_guard<std::mutex> lock(d->mu);
  for (IbMr& m : d->mrs)
    if (m.start == start && m.end == end) {
      m.refs++;
      *out = &m;
      return ncclSuccess;
    }
  BATON_CHECK(pdGetLocked(d));
  ibv_mr* mr = ibv_reg_mr(d->pd, (void*)start, end - start,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!mr) {
    int e = errno;
    pdPutLocked(d);
    return batonError(ncclSystemError, "IB %s: ibv_reg_mr(%p, %zu bytes) failed: %s", d->name.c_str(), (void*)start,
                      (size_t)(end - start), strerror(e));
  }
  d->mrs.push_back(IbMr{d, start, end, mr, 1});
  *out = &d->mrs.back();
  return ncclSuccess;
}

ncclResult_t mrDeregister(IbMr* m) {
  IbDev* d = m->dev;
  std::lock_guard<std::mutex> lock(d->mu);
  if (--m->refs > 0) return ncclSuccess;
  int rc = ibv_dereg_mr(m->mr);
  for (auto it = d->mrs.begin(); it != d->mrs.end(); ++it)
    if (&*it == m) {
      d->mrs.erase(it);
      break;
    }
  ncclResult_t res = pdPutLocked(d);
  if (rc) return batonError(ncclSystemError, "IB %s: ibv_dereg_mr failed: %s", d->name.c_str(), strerror(rc));
  return res;
}

}  // namespace netib
}  // namespace baton

// Topology discovery, RDMA part: the active ports libibverbs reports, with the speed, GUID and
// PCI address NCCL's InfiniBand plugin would give the topology (net_ib's getProperties).
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdlib.h>

#include <endian.h>
#include <cerrno>
#include <cstring>

#include "topo/discover_detail.h"

namespace baton {
namespace discover {
namespace {

// ibv_port_attr.active_speed is a one-hot code; the lane rate in Mb/s, as NCCL's table.
int laneMbps(uint8_t code) {
  switch (code) {
    case 1: return 2500;      // SDR
    case 2: return 5000;      // DDR
    case 4: return 10000;     // QDR
    case 8: return 10000;     // FDR10
    case 16: return 14000;    // FDR
    case 32: return 25000;    // EDR
    case 64: return 50000;    // HDR
    case 128: return 100000;  // NDR
    default: return 10000;    // unknown (XDR needs active_speed_ex, rdma-core >= 48): NCCL's 10 Gb/s
  }
}

// ibv_port_attr.active_width is a one-hot code too: 1x, 4x, 8x, 12x, 2x lanes.
int laneCount(uint8_t code) {
  switch (code) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 1;
  }
}

// The PCI function behind /sys/class/infiniband/<dev>; empty for a soft device (rxe, siw).
std::string pciBusIdOf(const char* ibdevPath) {
  std::string link = std::string(ibdevPath) + "/device";
  char* real = realpath(link.c_str(), nullptr);
  if (!real) return "";
  std::string path(real);
  free(real);
  std::string base = path.substr(path.rfind('/') + 1);
  unsigned d, b, s, f;
  char tail;
  if (sscanf(base.c_str(), "%x:%x:%x.%x%c", &d, &b, &s, &f, &tail) != 4) return "";
  return normalizeBusId(base);
}

}  // namespace

void probeIbverbs(std::vector<NetDevice>* out, std::string* notes) {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    // ENOSYS: no kernel support at all; treated like a machine without RDMA devices.
    addNote(notes, std::string("libibverbs: 0 RDMA devices (ibv_get_device_list: ") + strerror(errno) + ")");
    return;
  }
  addNote(notes, "libibverbs: " + std::to_string(n) + " RDMA device" + (n == 1 ? "" : "s"));
  for (int i = 0; i < n; ++i) {
    const char* name = ibv_get_device_name(list[i]);
    ibv_context* ctx = ibv_open_device(list[i]);
    if (!ctx) {
      addNote(notes, std::string("libibverbs: ") + name + ": cannot open (" + strerror(errno) + "), skipped");
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) != 0) {
      addNote(notes, std::string("libibverbs: ") + name + ": ibv_query_device failed, skipped");
      ibv_close_device(ctx);
      continue;
    }
    std::string busId = pciBusIdOf(list[i]->ibdev_path);
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, port, &pa) != 0) continue;
      // NCCL's plugin only offers ACTIVE ports; a cable-less port would fail every connection.
      if (pa.state != IBV_PORT_ACTIVE) {
        addNote(notes, std::string("libibverbs: ") + name + " port " + std::to_string(port) + " not active, skipped");
        continue;
      }
      NetDevice d;
      d.name = name;
      d.busId = busId;
      d.dev = static_cast<int>(out->size());
      d.port = port;
      d.guid = be64toh(attr.sys_image_guid);
      d.speedMbps = laneMbps(pa.active_speed) * laneCount(pa.active_width);
      d.maxConn = 131072;
      d.rdma = true;
      addNote(notes, std::string("libibverbs: ") + name + " port " + std::to_string(port) + " " +
                         (pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand") + ", " +
                         std::to_string(d.speedMbps) + " Mb/s" + (busId.empty() ? ", not on PCI" : ", PCI " + busId));
      out->push_back(d);
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
}

}  // namespace discover
}  // namespace baton

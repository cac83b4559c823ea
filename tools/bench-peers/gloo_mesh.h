// How the Gloo peer programs (gloo_allreduce_ring.cc, gloo_latency.cc) meet: one process per rank,
// a Gloo FileStore in a directory every rank can see, Gloo's TCP transport on an interface or an
// address. Header-only, like bench_args.h: the scripts build each program alone.
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>

#include <filesystem>
#include <memory>
#include <string>

#include "bench_args.h"

struct GlooMeshOptions {
  int rank = -1, size = -1, family = 0;
  std::string iface, host, store, prefix = "gloo";
};

// One mesh option (rank, size, iface, host, store, prefix or family, each spelled "--name") with its
// value `v` (may be null): 1 taken, 0 not one of these, -1 a bad value.
inline int parseMeshOption(const std::string& a, const char* v, GlooMeshOptions* o) {
  bool ok = v != nullptr;
  if (a == "--rank") ok = parseInt(v, 0, &o->rank);
  else if (a == "--size") ok = parseInt(v, 1, &o->size);
  else if (a == "--iface" && ok) o->iface = v;
  else if (a == "--host" && ok) o->host = v;
  else if (a == "--store" && ok) o->store = v;
  else if (a == "--prefix" && ok) o->prefix = v;
  else if (a == "--family") ok = parseInt(v, 4, &o->family) && (o->family == 4 || o->family == 6);
  else if (a != "--iface" && a != "--host" && a != "--store" && a != "--prefix") return 0;
  return ok ? 1 : -1;
}

// "" when the mesh options are complete, else what is missing.
inline std::string checkMeshOptions(const GlooMeshOptions& o) {
  if (o.rank < 0 || o.size < 1) return "--rank and --size are required";
  if (o.rank >= o.size) return "--rank must be below --size";
  if (o.iface.empty() == o.host.empty()) return "give exactly one of --iface and --host";
  if (o.store.empty()) return "--store DIR is required (a directory every rank can see)";
  return "";
}

// Every rank connected to every other (throws gloo::Exception on failure); *device (if given): the
// transport's description, for the programs' header lines.
inline std::shared_ptr<gloo::Context> connectMesh(const GlooMeshOptions& o, std::string* device = nullptr) {
  gloo::transport::tcp::attr attr;
  if (!o.iface.empty()) attr.iface = o.iface;
  else attr.hostname = o.host;
  attr.ai_family = o.family == 4 ? AF_INET : o.family == 6 ? AF_INET6 : AF_UNSPEC;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  if (device) *device = dev->str();
  std::filesystem::create_directories(o.store);  // both ranks may race here: that is fine
  gloo::rendezvous::FileStore fileStore(o.store);
  // A prefix per run keeps a later run from reading an earlier run's addresses in the same store.
  gloo::rendezvous::PrefixStore store(o.prefix, fileStore);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  ctx->connectFullMesh(store, dev);
  return ctx;
}

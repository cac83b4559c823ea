// An external network plugin's table, whatever its version (NCCL's ncclNet_v6 .. v11, declared in
// include/baton/plugin_net.h), behind one interface shaped like the newest: sizes are size_t, a
// receive takes one buffer, and the per-communicator context of v11 is one per process here.
// net_plugin_backend.cc builds baton's NetBackend on top of it; net_plugin_load.cc finds it.
// Lesson 16 (docs/lessons/16-plugins.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "net/net_backend.h"

namespace baton {

class PluginNetApi {
 public:
  virtual ~PluginNetApi() = default;
  virtual int version() const = 0;
  virtual const char* name() const = 0;
  // init (with baton's logger, the profiler callback (setNetProfilerCallback), and for v11 a context),
  // then devices(). A failure is the caller's to report.
  virtual ncclResult_t init() = 0;
  virtual ncclResult_t devices(int* ndev) = 0;
  virtual ncclResult_t getProperties(int dev, NetProperties* props) = 0;
  virtual ncclResult_t listen(int dev, void* handle, void** listenComm) = 0;
  virtual ncclResult_t connect(int dev, void* handle, void** sendComm) = 0;
  virtual ncclResult_t accept(void* listenComm, void** recvComm) = 0;
  virtual ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) = 0;
  virtual ncclResult_t deregMr(void* comm, void* mhandle) = 0;
  // `phandle`: the step's profiler reference (v10+ plugins pass it to the profiler callback), or null.
  virtual ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) = 0;
  virtual ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void** request) = 0;
  virtual ncclResult_t test(void* request, int* done, size_t* size) = 0;
  virtual ncclResult_t closeSend(void* sendComm) = 0;
  virtual ncclResult_t closeRecv(void* recvComm) = 0;
  virtual ncclResult_t closeListen(void* listenComm) = 0;
};

// The newest table `lib` (a dlopen handle) exports, from ncclNetPlugin_v11 down to _v6; null when
// it has none (or one whose name or functions are null).
std::unique_ptr<PluginNetApi> bindPluginNet(void* lib);

// A NetBackend that carries baton's messages over the plugin (net_plugin_backend.cc). `file` is
// the library, for messages.
std::unique_ptr<NetBackend> makePluginNetBackend(std::unique_ptr<PluginNetApi> api, std::string file);

}  // namespace baton

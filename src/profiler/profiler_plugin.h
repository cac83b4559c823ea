// NCCL's profiler plugins (NCCL_PROFILER_PLUGIN, versions 4 and 5 of NCCL 2.28.9's interface):
// loading one and calling it for one communicator. Lesson 13 (docs/lessons/13-profiling.md).
//
// As in NCCL (its src/plugin/profiler.cc): the library is found by the name rules of every plugin
// kind (misc/plugin_lib.h), its newest symbol wins, init runs once per communicator and answers
// with the mask of the event types the plugin wants, finalize runs at the communicator's destroy.
// Where baton differs, it says so: a plugin whose startEvent, stopEvent or recordEventState returns
// an error is named once in a WARN line and gets no more events from that communicator (NCCL
// ignores the result), so a broken plugin costs nothing and never fails a collective.
// profiler_events.h says which events baton emits, where, and with which parents.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "baton/plugin_profiler.h"

namespace baton {

class ProfilerPlugin {
 public:
  // Loads NCCL_PROFILER_PLUGIN if not yet loaded and calls its init; nullptr when there is none,
  // NCCL_PROFILER_PLUGIN=none, init failed, or the plugin wants no event (each said in an INFO line).
  static std::unique_ptr<ProfilerPlugin> start(uint64_t commId, const char* commName, int nNodes, int nRanks, int rank);
  ~ProfilerPlugin();  // the plugin's finalize
  ProfilerPlugin(const ProfilerPlugin&) = delete;
  ProfilerPlugin& operator=(const ProfilerPlugin&) = delete;

  // Whether the plugin wants any of the event types in `bits` (ncclProfile* bits); false once the
  // plugin has failed a call.
  bool wants(int bits) const { return (mask_.load(std::memory_order_relaxed) & bits) != 0; }
  bool wantsAny() const { return mask_.load(std::memory_order_relaxed) != 0; }
  // The handle the plugin gives `d` (d->rank is filled in), or nullptr: not wanted, failed, or the
  // plugin's own NULL. Thread-safe as far as the plugin is (NCCL calls it from several threads too).
  void* startEvent(ncclProfilerEventDescr_v5_t* d);
  void stopEvent(void* handle);
  void recordState(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args = nullptr);

  const std::string& name() const { return name_; }
  int version() const { return version_; }
  int rank() const { return rank_; }

 private:
  ProfilerPlugin() = default;
  void failed(const char* call, ncclResult_t res);
  void* ctx_ = nullptr;
  bool live_ = true;  // init succeeded: finalize and release at destruction
  std::atomic<int> mask_{0};
  std::atomic<bool> warned_{false};
  std::string name_;
  int version_ = 0;
  int rank_ = 0;
};

}  // namespace baton

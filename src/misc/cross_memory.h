// Single copies between processes of one host (lesson 09): cross-memory attach
// (process_vm_readv / process_vm_writev) moves bytes straight from one process's ordinary memory
// into another's, so a plain malloc buffer crosses with one copy instead of the FIFO's two (into
// the slot, out of it). The kernel permits it only to a process that may ptrace the other: the same
// user, Yama's ptrace_scope 0 (or no Yama), no seccomp filter refusing the calls. Init probes every
// local peer and every rank learns every edge's answer, so both ends of a ring edge agree on
// whether it carries pointers or values.
//
// Beside the sockets in misc/: a wrapper of what the kernel offers, which init (the core) probes and
// the kernels' PeerCopy calls; it knows nothing of registration, whose buffers take peers' mappings.
#pragma once

#include <cstdint>
#include <string>

#include "coll_args.h"

namespace baton {

// The address of a word peers read at init to find out whether they may (its value is known).
uint64_t crossMemoryProbeAddress();
// Reads process `pid`'s probe word at `addr`: true if the kernel allowed it and the value is
// right; else `why` says what failed (errno text, and Yama's setting when it is the likely cause).
bool crossMemoryProbe(int pid, uint64_t addr, std::string* why);

// For device code (CollArgs::peerCopy): single copies to and from rank r's process, pids by rank.
PeerCopy crossMemoryPeerCopy(const int32_t* pidsByRank);

}  // namespace baton

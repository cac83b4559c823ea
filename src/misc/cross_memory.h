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

// Yama's kernel.yama.ptrace_scope ("" where the kernel has no Yama), as the process first read it.
std::string yamaPtraceScope();

// Under Yama's ptrace_scope 1 (Ubuntu's default) a process may attach only to its descendants, so
// sibling ranks (started by baton-run or mpirun) may not single-copy from each other. As Open MPI's
// CMA support does, a process about to probe its local peers then lets any process of its own user
// attach (prctl PR_SET_PTRACER_ANY): the protection Yama adds against other processes of the same
// user is given up for this process, which scope 0 never had. BATON_SINGLE_COPY=0 never asks.
// Scope 2 and 3 cannot be helped. Returns whether single copies can work under `scope` after this
// call, and says in `note` what was done or why not (for the INFO line).
bool allowPeerAttach(const std::string& scope, std::string* note);

// For device code (CollArgs::peerCopy): single copies to and from rank r's process, pids by rank.
PeerCopy crossMemoryPeerCopy(const int32_t* pidsByRank);

}  // namespace baton

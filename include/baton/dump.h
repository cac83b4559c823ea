/* baton's flight recorder dumps, a public extra (not part of NCCL's API). Each communicator keeps
 * its last operations (BATON_FLIGHT_RECORDER, 2000 by default, 0: off) and what each of its
 * channels waits for. A dump writes them as JSON, one file per rank, and tools/baton-doctor reads
 * the ranks' files and says which rank the others wait for and why.
 * Dumps are written, where BATON_DUMP_DIR names a folder, on a communicator's first failure (a wait
 * that timed out, a peer that died), on ncclCommAbort, and on BATON_DUMP_SIGNAL (e.g. SIGUSR1);
 * and by this call, anywhere, at any time.
 * Lesson: docs/lessons/14-debugging-hangs.md. */
#ifndef BATON_DUMP_H
#define BATON_DUMP_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes comm's dump as <dir>/baton-dump-<comm id>-rank<rank>.json (dir NULL or "": BATON_DUMP_DIR;
 * the folder is made if missing), replacing an earlier dump of this rank, and logs an INFO line
 * naming it. When path is not NULL the file's path is copied there (pathSize bytes at most, NUL
 * ended). Local: no peer is involved, so it may be called while a collective of comm hangs (from
 * another thread) or after it failed.
 * ncclInvalidArgument: dir NULL and BATON_DUMP_DIR unset, or path given with pathSize 0 or too
 * small; ncclSystemError: the folder cannot be made or the file written. */
ncclResult_t batonCommDumpState(ncclComm_t comm, const char* dir, char* path, size_t pathSize);

#ifdef __cplusplus
}
#endif

#endif /* BATON_DUMP_H */

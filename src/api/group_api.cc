// ncclGroupStart / ncclGroupEnd: the calling thread's group (src/group.h holds it and runs it).
#include "api/api.h"
#include "group.h"

NCCL_API(ncclResult_t, ncclGroupStart);
ncclResult_t pncclGroupStart() { return baton::groupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd);
ncclResult_t pncclGroupEnd() { return baton::groupEnd(); }

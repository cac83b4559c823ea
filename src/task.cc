// Tasks (task.h): building them, a collective's shape, and the names of types and operators.
#include "task.h"

namespace baton {

CollShape collShapeOf(const Task& t, int nRanks) {
  CollShape s;
  s.typeBytes = typeSize(t.type);
  s.totalBytes = collBytes(t.func, t.count, s.typeBytes, nRanks);
  const size_t block = t.count * s.typeBytes;
  s.sendBytes = t.func == kFuncReduceScatter ? block * nRanks : block;
  s.recvBytes = t.func == kFuncAllGather ? block * nRanks : block;
  return s;
}

Task collTask(CollFunc func, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type) {
  Task t;
  t.kind = Task::kColl;
  t.func = func;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = count;
  t.type = type;
  return t;
}

Task sendRecvTask(Task::Kind kind, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type, int peer) {
  Task t;
  t.kind = kind;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = count;
  t.type = type;
  t.peer = peer;
  return t;
}

size_t typeSize(ncclDataType_t t) {
  static const size_t kSizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (int)t >= 0 && (int)t < ncclNumTypes ? kSizes[t] : 1;
}

const char* typeName(ncclDataType_t t) {
  static const char* kNames[ncclNumTypes] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                             "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return (int)t >= 0 && (int)t < ncclNumTypes ? kNames[t] : "invalid";
}

const char* opName(RedOpKind k) {
  static const char* kNames[kOpCount] = {"sum", "prod", "max", "min", "premulsum", "avg"};
  return (int)k >= 0 && k < kOpCount ? kNames[k] : "?";
}

}  // namespace baton

// Fuzz target: the tuning file (BATON_TUNING_FILE, written by baton-perf --calibrate and edited by
// hand) and what the tuner then does with the model it gave.
//
// Input: the file's text. A rejected file leaves the model untouched and says which line; an
// accepted one must yield a choice for every collective and size, as a communicator asks for them.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "tuner/tuner.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  const std::string text(in.all());
  static const TuningModel builtIn = defaultTuningModel();
  TuningModel m = builtIn;
  const ncclResult_t res = baton_fuzz::rejectsWithMessage([&] { return parseTuningText(text, "<fuzz>", &m); });
  if (res != ncclSuccess) {
    if (memcmp(&m, &builtIn, sizeof m) != 0) abort();  // a rejected file changes nothing
    return 0;
  }
  AlgoProtoMask all;
  if (parseAlgoProtoEnv(nullptr, nullptr, &all) != ncclSuccess) abort();
  for (int path = 0; path < kNumPaths; ++path)
    for (int func = 0; func < kFuncCount; ++func)
      for (int nRanks : {2, 3, 8})
        for (size_t bytes = 8; bytes <= (256u << 20); bytes <<= 5) {
          AlgoProtoChoice c;
          (void)chooseAlgoProto(m, path, all, CollFunc(func), nRanks, 1, bytes, &c);
        }
  return 0;
}

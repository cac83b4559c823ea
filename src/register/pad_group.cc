// The pads of a communicator's thread ranks, freed by the last of them (pad_group.h).
#include "register/pad_group.h"

#include <map>
#include <mutex>
#include <vector>

#include "register/mem_alloc.h"

namespace baton {
namespace {

struct Held {
  int left = 0;             // members that have not handed their pads over yet
  std::vector<void*> pads;  // those handed over, freed with the last
};
std::mutex gMu;
std::map<uint64_t, Held> gGroups;

}  // namespace

void releasePads(uint64_t group, int members, void* hostPad, void* devicePad) {
  std::vector<void*> freeNow;
  {
    std::lock_guard<std::mutex> lock(gMu);
    if (members <= 1 || group == 0) {
      freeNow = {hostPad, devicePad};
    } else {
      auto [it, fresh] = gGroups.try_emplace(group);
      if (fresh) it->second.left = members;
      it->second.pads.push_back(hostPad);
      it->second.pads.push_back(devicePad);
      if (--it->second.left == 0) {
        freeNow.swap(it->second.pads);
        gGroups.erase(it);
      }
    }
  }
  for (void* p : freeNow)
    if (p) memFree(p);
}

}  // namespace baton

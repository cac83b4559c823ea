// Fuzz target: NCCL's environment syntaxes as baton parses them.
//
// Input: a selector byte, then the variable's value (up to a NUL; NCCL_ALGO's value is followed by
// NCCL_PROTO's, and NCCL_IB_HCA's by an HCA name and a port byte):
//   0  NCCL_ALGO and NCCL_PROTO ("^LL128;allreduce:LL128", ...)
//   1  an integer or size variable (NCCL_BUFFSIZE=4M, 0x10, -1) and a seconds one
//   2  NCCL_SOCKET_IFNAME ("^docker,lo", "=eth0") against this machine's interfaces
//   3  a host:port address (NCCL_COMM_ID), numeric hosts only (a name would be a DNS query)
//   4  NCCL_IB_HCA ("=mlx5_0:1,mlx5_1", "^mlx5_2") against one HCA port
// Each parser either accepts or returns an error with a message; none may crash, overflow or hang.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "misc/param.h"
#include "misc/socket.h"
#include "net/ib/ib_comm.h"
#include "tuner/tuner.h"

using namespace baton;

namespace {

// setenv for one input, then unset (the next input starts clean).
struct EnvFor {
  const char* name;
  EnvFor(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }
  ~EnvFor() { unsetenv(name); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  switch (in.u8() % 5) {
    case 0: {
      const std::string algo = in.until('\0'), proto = in.until('\0');
      AlgoProtoMask mask;
      baton_fuzz::rejectsWithMessage([&] { return parseAlgoProtoEnv(algo.c_str(), proto.c_str(), &mask); });
      break;
    }
    case 1: {
      const std::string value = in.until('\0');
      EnvFor env("BATON_FUZZ_VALUE", value);
      // An integer with a K/M/G suffix whose product leaves int64 is no value: the default stays.
      char* end = nullptr;
      errno = 0;
      const long long v = strtoll(value.c_str(), &end, 0);
      const int shift = end && (*end == 'g' || *end == 'G') ? 30 : end && (*end == 'm' || *end == 'M') ? 20 : 0;
      const __int128 product = (__int128)v << shift;
      const bool overflows =
          errno == 0 && end != value.c_str() && shift && end[1] == 0 && (product > INT64_MAX || product < INT64_MIN);
      if (envInt("BATON_FUZZ_VALUE", 7, EnvLog::kQuiet) != 7 && overflows) abort();
      (void)envSeconds("BATON_FUZZ_VALUE", 1.5, EnvLog::kQuiet);
      break;
    }
    case 2: {
      EnvFor env("NCCL_SOCKET_IFNAME", in.until('\0'));
      std::vector<NetInterface> ifs;
      if (baton_fuzz::rejectsWithMessage([&] { return findNetInterfaces(&ifs); }) == ncclSuccess && ifs.empty())
        abort();  // success means at least one interface
      SocketAddress a{};
      std::string name;
      baton_fuzz::rejectsWithMessage([&] { return chooseBindAddress(nullptr, &a, &name); });
      break;
    }
    case 3: {
      const std::string text = in.until('\0');
      SocketAddress a{};
      if (baton_fuzz::rejectsWithMessage([&] { return parseAddress(text.c_str(), &a, /*numericOnly=*/true); }) ==
          ncclSuccess)
        (void)addressToString(a);
      break;
    }
    case 4: {
      const std::string spec = in.until('\0'), dev = in.until('\0');
      (void)netib::hcaSelected(spec, dev, in.range(0, 3));
      break;
    }
  }
  return 0;
}

// Dumps of thread ranks (include/baton/dump.h, lesson 14): after three exact AllReduces, rank 0
// alone calls AllGather and times out; its dump names the operation, its number and the peer and
// step it waited for, rank 1's dump shows its last operation completed; each entry names its
// buffers' kind (a send from a registered buffer, a receive into a plain one); and bad arguments to
// batonCommDumpState are refused with a message that names them.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "baton/dump.h"
#include "collectives/harness.h"
#include "nccl.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Occurrences of `what` in `text`.
int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string tempFolder() {
  char tmpl[] = "/tmp/baton-dump-test-XXXXXX";
  return mkdtemp(tmpl) ? tmpl : "";
}

TEST(FlightDump, NamesTheOperationAndThePeerAWaitTimedOutOn) {
  setenv("BATON_WAIT_TIMEOUT", "1", 1);
  bt::Comms comms = bt::initAll(2);
  unsetenv("BATON_WAIT_TIMEOUT");
  ASSERT_EQ(comms.size(), 2u);
  const size_t count = 1000;
  std::vector<float> in[2], out[2];
  for (int r = 0; r < 2; ++r) in[r].assign(count * 2, float(r + 1)), out[r].assign(count * 2, 0.0f);
  for (int step = 0; step < 3; ++step) {
    std::string err = bt::runRanks(2, bt::Drive::Threads, [&](int r) {
      return ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr);
    });
    ASSERT_EQ(err, "");
    ASSERT_EQ(out[0][count - 1], 3.0f);
  }
  // Rank 0 alone: its AllGather waits for rank 1, which never calls it.
  EXPECT_NE(ncclAllGather(in[0].data(), out[0].data(), count, ncclFloat, comms[0], nullptr), ncclSuccess);
  const std::string dir = tempFolder();
  char path[2][512];
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(batonCommDumpState(comms[r], dir.c_str(), path[r], sizeof path[r]), ncclSuccess);
  const std::string d0 = readFile(path[0]), d1 = readFile(path[1]);
  EXPECT_NE(std::string(path[0]).find("-rank0.json"), std::string::npos) << path[0];
  EXPECT_NE(d0.find("\"format\":\"baton-flight-recorder\""), std::string::npos);
  EXPECT_NE(d0.find("\"reason\":\"api\""), std::string::npos);
  EXPECT_EQ(countOf(d0, "\"op\":\"AllReduce\""), 3);
  EXPECT_EQ(countOf(d0, "\"state\":\"done\""), 3);
  EXPECT_NE(d0.find("\"seq\":3,\"op\":\"AllGather\""), std::string::npos) << d0;
  EXPECT_NE(d0.find("\"state\":\"failed\""), std::string::npos);
  EXPECT_NE(d0.find("\"count\":1000"), std::string::npos);
  // The wait that timed out: the peer and the counter it waited for.
  EXPECT_NE(d0.find("\"state\":\"timed out\",\"peer\":1"), std::string::npos) << d0;
  EXPECT_NE(d0.find("timed out (BATON_WAIT_TIMEOUT)"), std::string::npos);  // the error
  // Rank 1 completed its three AllReduces and waits for nothing.
  EXPECT_EQ(countOf(d1, "\"state\":\"done\""), 3);
  EXPECT_EQ(d1.find("AllGather"), std::string::npos);
  EXPECT_EQ(d1.find("\"state\":\"waiting\""), std::string::npos);
  EXPECT_EQ(d1.find("timed out"), std::string::npos);
  for (int r = 0; r < 2; ++r) unlink(path[r]);
  rmdir(dir.c_str());
  for (ncclComm_t c : comms) ncclCommAbort(c);
}

// Each entry names its buffers' kind: a send from a registered buffer and a receive into a plain
// one, and an AllReduce on registered buffers.
TEST(FlightDump, EntriesNameTheirBuffersKind) {
  bt::Comms comms = bt::initAll(2);
  ASSERT_EQ(comms.size(), 2u);
  const size_t count = 4096, bytes = count * sizeof(float);
  // Whole pages of their own: a registration covers the pages its buffer touches, so a plain
  // buffer sharing a page with a registered one would count as registered.
  float *reg[2], *plain[2];
  void* handle[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r) {
    reg[r] = static_cast<float*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    plain[r] = static_cast<float*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(reg[r], MAP_FAILED);
    ASSERT_NE(plain[r], MAP_FAILED);
    for (size_t i = 0; i < count; ++i) reg[r][i] = float(r + 1);
    ASSERT_EQ(ncclCommRegister(comms[r], reg[r], bytes, &handle[r]), ncclSuccess);
  }
  std::string err = bt::runRanks(2, bt::Drive::Threads, [&](int r) {
    ncclGroupStart();
    ncclSend(reg[r], count, ncclFloat, 1 - r, comms[r], nullptr);
    ncclRecv(plain[r], count, ncclFloat, 1 - r, comms[r], nullptr);
    ncclGroupEnd();
    return ncclAllReduce(reg[r], reg[r], count, ncclFloat, ncclSum, comms[r], nullptr);
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(plain[0][count - 1], 2.0f);
  const std::string dir = tempFolder();
  char path[512];
  ASSERT_EQ(batonCommDumpState(comms[0], dir.c_str(), path, sizeof path), ncclSuccess);
  const std::string d = readFile(path);
  EXPECT_NE(d.find("\"kind\":\"send\""), std::string::npos) << d;
  const size_t send = d.find("\"kind\":\"send\""), recv = d.find("\"kind\":\"recv\"");
  const size_t coll = d.find("\"op\":\"AllReduce\"");
  ASSERT_NE(recv, std::string::npos);
  ASSERT_NE(coll, std::string::npos);
  EXPECT_EQ(d.find("\"buffers\":", send), d.find("\"buffers\":\"registered\"", send)) << d;
  EXPECT_EQ(d.find("\"buffers\":", recv), d.find("\"buffers\":\"plain\"", recv)) << d;
  EXPECT_EQ(d.find("\"buffers\":", coll), d.find("\"buffers\":\"registered\"", coll)) << d;
  unlink(path);
  rmdir(dir.c_str());
  for (int r = 0; r < 2; ++r) ncclCommDeregister(comms[r], handle[r]);
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  for (int r = 0; r < 2; ++r) munmap(reg[r], bytes), munmap(plain[r], bytes);
}

TEST(FlightDump, BadArgumentsAreNamed) {
  const bt::Comms& comms = bt::cachedComms(1);
  ASSERT_EQ(comms.size(), 1u);
  char path[512];
  EXPECT_EQ(batonCommDumpState(nullptr, "/tmp", path, sizeof path), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
  unsetenv("BATON_DUMP_DIR");
  EXPECT_EQ(batonCommDumpState(comms[0], nullptr, nullptr, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("BATON_DUMP_DIR"), std::string::npos);
  EXPECT_EQ(batonCommDumpState(comms[0], "/tmp", path, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("pathSize is 0"), std::string::npos);
  EXPECT_EQ(batonCommDumpState(comms[0], "/proc/baton-no-such-folder", nullptr, 0), ncclSystemError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("/proc/baton-no-such-folder"), std::string::npos);
  const std::string dir = tempFolder();
  char small[8];
  EXPECT_EQ(batonCommDumpState(comms[0], dir.c_str(), small, sizeof small), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("too small"), std::string::npos);
  ASSERT_EQ(batonCommDumpState(comms[0], dir.c_str(), path, sizeof path), ncclSuccess);  // the folder is fine
  unlink(path);
  rmdir(dir.c_str());
}

}  // namespace

// NCCL's RAS service, the parts that need no job (lesson 14): the client protocol's lines and
// answers (src/ras/client_protocol.h), NCCL_RAS_ADDR's forms, and the status report
// (src/ras/status_report.h) for a healthy job, a dead rank, an unresponsive one and ranks whose
// collective counts differ, as text and as JSON. tests/fault/ras_check.sh runs the service itself.
#include <gtest/gtest.h>

#include <string>

#include "nccl.h"
#include "ras/client_protocol.h"
#include "ras/ras_service.h"
#include "ras/status_report.h"

namespace {

using baton::RasAction;
using baton::RasCommView;
using baton::RasJobView;
using baton::RasRankView;
using baton::RasSession;

TEST(RasProtocol, HandshakeTimeoutFormatAndStatus) {
  RasSession s;
  std::string reply;
  EXPECT_EQ(baton::rasOnLine(s, "CLIENT PROTOCOL 2", &reply), RasAction::kReply);
  EXPECT_EQ(reply, "SERVER PROTOCOL 2\n");
  EXPECT_EQ(baton::rasOnLine(s, "client protocol 9", &reply), RasAction::kReply);  // answered with ours
  EXPECT_EQ(reply, "SERVER PROTOCOL 2\n");
  EXPECT_EQ(baton::rasOnLine(s, "TIMEOUT 3\r", &reply), RasAction::kReply);  // telnet's line ends too
  EXPECT_EQ(reply, "OK\n");
  EXPECT_EQ(s.timeoutSec, 3);
  EXPECT_EQ(baton::rasOnLine(s, "timeout 0", &reply), RasAction::kReply);
  EXPECT_EQ(s.timeoutSec, 0);
  EXPECT_EQ(baton::rasOnLine(s, "SET FORMAT json", &reply), RasAction::kReply);
  EXPECT_EQ(reply, "OK\n");
  EXPECT_TRUE(s.json);
  EXPECT_EQ(baton::rasOnLine(s, "set format TEXT", &reply), RasAction::kReply);
  EXPECT_FALSE(s.json);
  EXPECT_EQ(baton::rasOnLine(s, "STATUS", &reply), RasAction::kStatus);
  EXPECT_FALSE(s.verbose);
  EXPECT_EQ(baton::rasOnLine(s, "Verbose Status", &reply), RasAction::kStatus);
  EXPECT_TRUE(s.verbose);
}

TEST(RasProtocol, BadLinesGetErrors) {
  RasSession s;
  std::string reply;
  baton::rasOnLine(s, "TIMEOUT -1", &reply);
  EXPECT_EQ(reply, "ERROR: Invalid timeout value -1\n");
  baton::rasOnLine(s, "TIMEOUT 5s", &reply);
  EXPECT_EQ(reply, "ERROR: Invalid timeout value 5s\n");
  EXPECT_EQ(s.timeoutSec, baton::kRasDefaultTimeoutSec);
  baton::rasOnLine(s, "SET FORMAT yaml", &reply);
  EXPECT_EQ(reply, "ERROR: Invalid format yaml\n");
  baton::rasOnLine(s, "SHUTDOWN", &reply);
  EXPECT_EQ(reply, "ERROR: Unknown command SHUTDOWN\n");
  EXPECT_EQ(baton::rasOnLine(s, "MONITOR lifecycle,bogus", &reply), RasAction::kReply);
  EXPECT_EQ(reply, "ERROR: Invalid event group 'bogus'\n");
  EXPECT_EQ(s.monitorGroups, 0u);
}

TEST(RasProtocol, MonitorGroups) {
  RasSession a, b, c;
  std::string reply;
  EXPECT_EQ(baton::rasOnLine(a, "MONITOR", &reply), RasAction::kMonitor);
  EXPECT_EQ(reply, "OK\n");
  EXPECT_EQ(a.monitorGroups, (unsigned)baton::kRasLifecycle);
  baton::rasOnLine(b, "monitor trace", &reply);
  EXPECT_EQ(b.monitorGroups, (unsigned)baton::kRasTrace);
  baton::rasOnLine(c, "MONITOR lifecycle, trace", &reply);
  EXPECT_EQ(c.monitorGroups, (unsigned)(baton::kRasLifecycle | baton::kRasTrace));
}

TEST(RasAddr, NcclRasAddrForms) {
  std::string h, p;
  ASSERT_TRUE(baton::rasParseAddr("localhost:28028", &h, &p));
  EXPECT_EQ(h, "localhost");
  EXPECT_EQ(p, "28028");
  ASSERT_TRUE(baton::rasParseAddr("127.0.0.2", &h, &p));
  EXPECT_EQ(h, "127.0.0.2");
  EXPECT_EQ(p, "28028");
  ASSERT_TRUE(baton::rasParseAddr(":4000", &h, &p));
  EXPECT_EQ(h, "localhost");
  EXPECT_EQ(p, "4000");
  ASSERT_TRUE(baton::rasParseAddr("[::1]:4001", &h, &p));
  EXPECT_EQ(h, "::1");
  EXPECT_EQ(p, "4001");
  EXPECT_FALSE(baton::rasParseAddr("::1:4001", &h, &p));  // a v6 address needs brackets
  EXPECT_FALSE(baton::rasParseAddr("localhost:http", &h, &p));
  EXPECT_FALSE(baton::rasParseAddr("localhost:70000", &h, &p));
  EXPECT_FALSE(baton::rasParseAddr("[::1", &h, &p));
}

RasRankView present(int rank, int nRanks, const char* node, int pid, uint64_t allreduces) {
  RasRankView v;
  v.kind = RasRankView::kPresent;
  v.node = node, v.pid = pid;
  v.state.commHash = 0xabc, v.state.rank = rank, v.state.nRanks = nRanks, v.state.pid = pid;
  v.state.collCount[baton::kFuncAllReduce] = allreduces;
  v.state.lastFunc = baton::kFuncAllReduce, v.state.lastSeq = allreduces - 1;
  v.state.flags = baton::kRasLastDone;
  snprintf(v.state.host, sizeof v.state.host, "%s", node);
  return v;
}

RasJobView job4(uint64_t allreduces) {
  RasJobView job;
  RasCommView c;
  c.hash = 0x3f00000000000001ull, c.nRanks = 4;
  for (int r = 0; r < 4; ++r) c.ranks.push_back(present(r, 4, r < 2 ? "hostA" : "hostB", 100 + r, allreduces));
  job.comms.push_back(c);
  job.timestamp = "2026-11-29 12:00:00";
  return job;
}

TEST(RasReport, HealthyJob) {
  const std::string t = baton::rasStatusText(job4(17), false);
  EXPECT_NE(t.find("Job summary"), std::string::npos);
  // 2 nodes, 2 processes per node, 1 rank per process, 4 processes, 1 communicator.
  EXPECT_NE(t.find("        2          2            1          4              1"), std::string::npos) << t;
  EXPECT_NE(t.find("    0         1         2         2         4         4   RUNNING  OK"), std::string::npos) << t;
  EXPECT_EQ(t.find("Errors\n======"), std::string::npos) << t;
  EXPECT_EQ(t.find("Warnings\n========"), std::string::npos) << t;
  const std::string v = baton::rasStatusText(job4(17), true);
  EXPECT_NE(v.find("AllReduce #16 done"), std::string::npos) << v;
}

TEST(RasReport, DeadAndUnresponsiveRanks) {
  RasJobView job = job4(17);
  RasRankView& dead = job.comms[0].ranks[3];
  dead.kind = RasRankView::kDead, dead.why = "its watchdog connection closed";
  RasRankView& slow = job.comms[0].ranks[1];
  slow.kind = RasRankView::kUnresponsive;
  job.timeouts = 1;
  job.comms[0].ranks[0].state.asyncError = ncclRemoteError;
  const std::string t = baton::rasStatusText(job, false);
  EXPECT_NE(t.find("RUNNING  ERROR"), std::string::npos) << t;
  EXPECT_NE(t.find("DEAD\n  1 job process is considered dead"), std::string::npos) << t;
  EXPECT_NE(t.find("Process 103 on node hostB: its watchdog connection closed"), std::string::npos) << t;
  EXPECT_NE(t.find("INCOMPLETE\n  Missing communicator data from 2 ranks\n  The missing ranks: 1 3"), std::string::npos)
      << t;
  EXPECT_NE(t.find("Rank 1 -- process 101 on node hostA: did not answer in time"), std::string::npos) << t;
  EXPECT_NE(t.find(std::string("Rank 0 reports ") + ncclGetErrorString(ncclRemoteError) + " (asynchronous error 6)"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("different status"), std::string::npos) << t;  // the missing ranks are listed once, above
  EXPECT_NE(t.find("TIMEOUT\n  Encountered 1 communication timeout"), std::string::npos) << t;
  const std::string j = baton::rasStatusJson(job);
  EXPECT_NE(j.find("\"ranks_count\":2,\"missing_ranks_count\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"rank\":3,\"host\":\"hostB\",\"pid\":103,\"cuda_dev\":-1,\"nvml_dev\":-1,\"status\":{"
                   "\"unresponsive\":false,\"considered_dead\":true}"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"unresponsive\":true,\"considered_dead\":false"), std::string::npos) << j;
  EXPECT_NE(j.find("\"async_error\":6"), std::string::npos) << j;
  EXPECT_NE(j.find("\"timeouts_count\":1"), std::string::npos) << j;
}

TEST(RasReport, CountMismatchNamesTheOutlierAndItsWaiters) {
  RasJobView job = job4(42);
  RasRankView& idle = job.comms[0].ranks[2];
  idle.state.collCount[baton::kFuncAllReduce] = 41, idle.state.lastSeq = 40;  // it never called #41
  RasRankView& waiter = job.comms[0].ranks[3];
  waiter.state.flags = baton::kRasWaiting, waiter.state.waitPeer = 2, waiter.state.waitMs = 2500;
  const std::string t = baton::rasStatusText(job, false);
  EXPECT_NE(t.find("RUNNING  MISMATCH"), std::string::npos) << t;
  EXPECT_NE(t.find("Communicator ranks have different AllReduce operation counts\n"
                   "  3 ranks have launched up to operation 42\n"
                   "  1 rank has launched up to operation 41\n"
                   "  Rank 2 -- process 102 on node hostB; last collective AllReduce #40, done\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("STALLED\n  Rank 3 waits for data from rank 2 for 2.5 s, in AllReduce #41"), std::string::npos) << t;
  const std::string j = baton::rasStatusJson(job);
  EXPECT_NE(j.find("\"waiting_on\":{\"rank\":2,\"ms\":2500}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"AllReduce\":41"), std::string::npos) << j;
}

}  // namespace

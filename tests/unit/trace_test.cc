// BATON_TRACE (src/misc/trace.h): events from many threads land with the right ids and times, processes
// of one job merge into one file while another job replaces it, the buffer's cap drops and counts,
// the exit-time flush writes what is left, and the file is valid JSON once closed with "]".
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "misc/trace.h"
#include "unit/unit_helpers.h"

namespace {

using baton::kTraceHostLane;
using baton::traceComplete;
using baton::traceFlush;

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + needle.size())) ++n;
  return n;
}

// The writer's exact text for one complete event, as the tests below expect to find it.
std::string xEvent(const std::string& name, int pid, int tid, const std::string& ts, const std::string& dur) {
  return "{\"name\":\"" + name + "\",\"cat\":\"test\",\"ph\":\"X\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + ts + ",\"dur\":" + dur;
}

std::string header(const char* jobHex) {
  return std::string("[\n{\"name\":\"baton_job\",\"ph\":\"M\",\"pid\":0,\"args\":{\"job\":\"") + jobHex + "\"}},\n";
}

// Every line after "[" is one object ending in ",", but the last two: the end marker without a
// comma, and "]". What concurrent appends must not break.
::testing::AssertionResult wellFormedLines(const std::string& text) {
  std::vector<std::string> ls = lines(text);
  if (ls.empty() || ls[0] != "[") return ::testing::AssertionFailure() << "first line is not \"[\"";
  if (ls.size() < 3 || ls.back() != "]" || ls[ls.size() - 2].find("\"baton_trace_end\"") == std::string::npos ||
      ls[ls.size() - 2].back() != '}')
    return ::testing::AssertionFailure() << "the file does not end with the end marker and \"]\"";
  ls.resize(ls.size() - 2);
  for (size_t i = 1; i < ls.size(); ++i)
    if (ls[i].size() < 3 || ls[i].front() != '{' || ls[i].substr(ls[i].size() - 2) != "},")
      return ::testing::AssertionFailure() << "line " << i + 1 << " is not one event: " << ls[i];
  if (text.back() != '\n') return ::testing::AssertionFailure() << "file does not end in a newline";
  return ::testing::AssertionSuccess();
}

class Trace : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/baton-trace-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/trace.json";
    baton::traceSetPathForTest(path_.c_str());
  }
  void TearDown() override {
    baton::traceSetPathForTest(nullptr);  // nothing left for the exit-time flush
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_, path_;
};

TEST_F(Trace, EventsFromManyThreadsKeepTheirIdsAndTimes) {
  ASSERT_TRUE(baton::traceEnabled());
  constexpr int kThreads = 4, kEvents = 200;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {
      // Rank t; lanes alternate between channel t and the host. Times are synthetic so the
      // expected text is exact: start = 5 s + t ms + i us + 7 ns, duration = 1.5 us + i ns.
      for (int i = 0; i < kEvents; ++i) {
        const uint64_t start = 5000000000ull + t * 1000000ull + i * 1000ull + 7;
        const std::string name = "t" + std::to_string(t) + "e" + std::to_string(i);
        traceComplete(t, i % 2 ? kTraceHostLane : t, name.c_str(), "test", start, start + 1500 + i);
      }
    });
  for (auto& t : ts) t.join();
  ASSERT_TRUE(traceFlush(0xabc));

  const std::string text = readFile(path_);
  EXPECT_EQ(text.rfind(header("0000000000000abc"), 0), 0u) << text.substr(0, 200);
  EXPECT_TRUE(wellFormedLines(text));
  EXPECT_EQ(countOf(text, "\"ph\":\"X\""), size_t(kThreads * kEvents));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEvents; ++i) {
      char tsText[32], durText[32];
      snprintf(tsText, sizeof tsText, "%d.%03d", 5000000 + t * 1000 + i, 7);
      snprintf(durText, sizeof durText, "1.%03d", 500 + i);
      const int tid = (i % 2 ? kTraceHostLane : t) + 2;
      const std::string want = xEvent("t" + std::to_string(t) + "e" + std::to_string(i), t + 1, tid, tsText, durText);
      ASSERT_EQ(countOf(text, want + "}"), 1u) << "missing or repeated: " << want;
    }
    const std::string pid = "\"pid\":" + std::to_string(t + 1);
    EXPECT_EQ(countOf(text, "{\"name\":\"process_name\",\"ph\":\"M\"," + pid + ",\"args\":{\"name\":\"rank " +
                                std::to_string(t) + "\"}}"),
              1u);
    EXPECT_EQ(countOf(text, "{\"name\":\"thread_name\",\"ph\":\"M\"," + pid + ",\"tid\":" + std::to_string(t + 2) +
                                ",\"args\":{\"name\":\"channel " + std::to_string(t) + "\"}}"),
              1u);
    const std::string host =
        "{\"name\":\"thread_name\",\"ph\":\"M\"," + pid + ",\"tid\":1,\"args\":{\"name\":\"host\"}}";
    EXPECT_EQ(countOf(text, host), 1u);
  }
}

TEST_F(Trace, ArgsAndSpansAreRecorded) {
  traceComplete(3, 63, "step", "test", 1000, 3000, "\"bytes\":1024,\"step\":3");
  {
    baton::TraceSpan span(3, kTraceHostLane, "hostWork", "api");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(traceFlush(1));
  const std::string text = readFile(path_);
  EXPECT_NE(text.find(xEvent("step", 4, 65, "1.000", "2.000") + ",\"args\":{\"bytes\":1024,\"step\":3}}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"args\":{\"name\":\"channel 63\"}"), std::string::npos);
  const size_t at = text.find("{\"name\":\"hostWork\",\"cat\":\"api\",\"ph\":\"X\",\"pid\":4,\"tid\":1,\"ts\":");
  ASSERT_NE(at, std::string::npos) << text;
  const double dur = atof(text.c_str() + text.find("\"dur\":", at) + 6);
  EXPECT_GE(dur, 2000.0);  // us
  EXPECT_LT(dur, 2e6);
}

TEST_F(Trace, ProcessesOfOneJobMergeIntoOneFile) {
  constexpr int kChildren = 2, kEvents = 20000;
  // Buffered before the fork: the children must not write the parent's events a second time.
  traceComplete(2, kTraceHostLane, "parent", "test", 1, 2);
  std::vector<pid_t> kids;
  for (int r = 0; r < kChildren; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Enough events that an unlocked writer would interleave with the other child's lines.
      for (int i = 0; i < kEvents; ++i)
        traceComplete(r, 0, ("r" + std::to_string(r) + "e" + std::to_string(i)).c_str(), "test", 1000 + i, 2000 + i);
      _exit(traceFlush(0x77) ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  }
  ASSERT_TRUE(traceFlush(0x77));

  const std::string text = readFile(path_);
  EXPECT_EQ(text.rfind(header("0000000000000077"), 0), 0u);
  EXPECT_EQ(countOf(text, "\"baton_job\""), 1u);
  EXPECT_TRUE(wellFormedLines(text));
  EXPECT_EQ(countOf(text, "\"ph\":\"X\""), size_t(kChildren * kEvents + 1));
  for (int r = 0; r < kChildren; ++r) {
    EXPECT_EQ(countOf(text, "\"name\":\"r" + std::to_string(r) + "e"), size_t(kEvents));
    EXPECT_EQ(countOf(text, "\"args\":{\"name\":\"rank " + std::to_string(r) + "\"}"), 1u);
  }
  EXPECT_EQ(countOf(text, xEvent("parent", 3, 1, "0.001", "0.001")), 1u);
}

TEST_F(Trace, AnotherJobStartsTheFileOverAndTheSameJobAppends) {
  traceComplete(0, 0, "old", "test", 10, 20);
  ASSERT_TRUE(traceFlush(0xa));
  ASSERT_NE(readFile(path_).find("\"name\":\"old\""), std::string::npos);

  traceComplete(0, 0, "new", "test", 30, 40);
  ASSERT_TRUE(traceFlush(0xb));
  std::string text = readFile(path_);
  EXPECT_EQ(text.rfind(header("000000000000000b"), 0), 0u) << text;
  EXPECT_EQ(text.find("\"name\":\"old\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"new\""), std::string::npos);

  traceComplete(1, 0, "again", "test", 50, 60);
  ASSERT_TRUE(traceFlush(0xb));
  text = readFile(path_);
  EXPECT_EQ(countOf(text, "\"baton_job\""), 1u);
  EXPECT_NE(text.find("\"name\":\"new\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"again\""), std::string::npos);
  EXPECT_TRUE(wellFormedLines(text));

  // A file from something else entirely is replaced too.
  std::ofstream(path_) << "not a trace\n";
  traceComplete(0, 0, "fresh", "test", 70, 80);
  ASSERT_TRUE(traceFlush(0xb));
  text = readFile(path_);
  EXPECT_EQ(text.rfind(header("000000000000000b"), 0), 0u) << text;
  EXPECT_EQ(text.find("not a trace"), std::string::npos);
}

TEST_F(Trace, FullBufferDropsAndCounts) {
  baton::traceSetPathForTest(path_.c_str(), 10);
  for (int i = 0; i < 15; ++i) traceComplete(0, 0, "e", "test", i, i + 1);
  ASSERT_TRUE(traceFlush(5));
  std::string text = readFile(path_);
  EXPECT_EQ(countOf(text, "\"ph\":\"X\""), 10u);
  EXPECT_NE(text.find("{\"name\":\"baton_trace_dropped\",\"ph\":\"M\",\"pid\":1,\"args\":{\"dropped\":5}}"),
            std::string::npos)
      << text;
  // The flush emptied the buffer: recording resumes, and the count restarts.
  traceComplete(0, 0, "later", "test", 100, 101);
  ASSERT_TRUE(traceFlush(5));
  text = readFile(path_);
  EXPECT_EQ(countOf(text, "\"ph\":\"X\""), 11u);
  EXPECT_EQ(countOf(text, "baton_trace_dropped"), 1u);
}

TEST_F(Trace, ExitFlushWritesWhatIsLeftUnderTheLastJob) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    traceComplete(0, 0, "flushed", "test", 1, 2);
    traceFlush(0x99);
    traceComplete(0, 0, "atExit", "test", 3, 4);
    std::exit(0);  // runs atexit handlers, unlike _exit
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  const std::string text = readFile(path_);
  EXPECT_EQ(text.rfind(header("0000000000000099"), 0), 0u) << text;
  EXPECT_NE(text.find("\"name\":\"flushed\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"atExit\""), std::string::npos) << text;
}

// The real entry point: BATON_TRACE in the environment of a fresh process that records and just
// exits. The child is this binary, running only the disabled test below.
TEST_F(Trace, EnvironmentVariableTurnsItOnAndExitFlushes) {
  const std::string log = dir_ + "/child.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("BATON_TRACE", path_.c_str(), 1);
    if (freopen(log.c_str(), "w", stdout)) dup2(fileno(stdout), 2);
    execl("/proc/self/exe", "trace_child", "--gtest_also_run_disabled_tests",
          "--gtest_filter=TraceEnvChild.DISABLED_RecordsAndExits", static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st << ":\n" << readFile(log);
  const std::string text = readFile(path_);
  EXPECT_TRUE(wellFormedLines(text)) << text;
  EXPECT_EQ(countOf(text, "\"baton_job\""), 1u) << text;
  EXPECT_NE(text.find("{\"name\":\"fromEnv\",\"cat\":\"test\",\"ph\":\"X\",\"pid\":8,\"tid\":1,"), std::string::npos)
      << text;
}

TEST(TraceEnvChild, DISABLED_RecordsAndExits) {
  ASSERT_TRUE(baton::traceEnabled());
  baton::TraceSpan span(7, kTraceHostLane, "fromEnv", "test");
}

TEST_F(Trace, UnwritableFileIsReportedNotFatal) {
  baton::traceSetPathForTest((dir_ + "/no/such/dir/trace.json").c_str());
  traceComplete(0, 0, "lost", "test", 1, 2);
  EXPECT_FALSE(traceFlush(1));
  EXPECT_TRUE(traceFlush(1));  // the failed batch was discarded, not kept to grow without bound
  traceComplete(0, 0, "lost", "test", 1, 2);
  EXPECT_FALSE(traceFlush(1));  // fails again, quietly (warned once), and does not crash
}

TEST_F(Trace, DisabledRecordsNothing) {
  baton::traceSetPathForTest(nullptr);
  EXPECT_FALSE(baton::traceEnabled());
  traceComplete(0, 0, "ignored", "test", 1, 2);
  { baton::TraceSpan span(0, 0, "ignored", "test"); }
  EXPECT_TRUE(traceFlush(1));
  struct stat sb;
  EXPECT_NE(stat(path_.c_str(), &sb), 0) << "a disabled trace created " << path_;
}

TEST_F(Trace, OutputIsValidJsonOnceClosed) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found: JSON not parsed";
  traceComplete(0, 0, "quote\" back\\slash\ttab", "c\"at", 1, 2, "\"bytes\":1024,\"op\":\"ring\"");
  traceComplete(1, kTraceHostLane, "plain", "test", 3, 5);
  ASSERT_TRUE(traceFlush(0x1234));
  traceComplete(0, 1, "appended", "test", 6, 9);
  ASSERT_TRUE(traceFlush(0x1234));

  // The file as it is: valid JSON after every flush (the end marker and "]" move with the appends).
  const std::string text = readFile(path_), closed = path_, script = dir_ + "/check.py";
  ASSERT_EQ(std::count(text.begin(), text.end(), ']'), 1) << "one closing bracket, after the appends";
  std::ofstream(script) << "import json, sys\n"
                           "ev = json.load(open(sys.argv[1]))\n"
                           "x = [e for e in ev if e['ph'] == 'X']\n"
                           "assert ev[0]['name'] == 'baton_job' and ev[0]['args']['job'] == '0000000000001234', ev[0]\n"
                           "assert len(x) == 3, x\n"
                           "e = [e for e in x if e['cat'] == 'c\"at'][0]\n"
                           "assert e['name'] == 'quote\" back\\\\slash\\ttab', e['name']\n"
                           "assert e['args'] == {'bytes': 1024, 'op': 'ring'}, e['args']\n"
                           "assert e['ts'] == 0.001 and e['dur'] == 0.001, e\n"
                           "names = {(m['pid'], m['args']['name']) for m in ev if m['name'] == 'process_name'}\n"
                           "assert names == {(1, 'rank 0'), (2, 'rank 1')}, names\n";
  EXPECT_EQ(std::system(("python3 '" + script + "' '" + closed + "'").c_str()), 0) << text;
}

}  // namespace

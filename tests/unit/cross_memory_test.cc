// Single copies between processes (lesson 09, src/misc/cross_memory.h): what each Yama
// ptrace_scope allows, the prctl a process makes under scope 1 (checked in a child, which is
// where its effect lands), and a real process_vm_readv from a sibling process after it.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "misc/cross_memory.h"

namespace {

TEST(CrossMemory, ScopeZeroOrNoYamaNeedsNothing) {
  std::string note = "stale";
  EXPECT_TRUE(baton::allowPeerAttach("", &note));
  EXPECT_EQ(note, "");
  EXPECT_TRUE(baton::allowPeerAttach("0", &note));
  EXPECT_EQ(note, "");
}

TEST(CrossMemory, ScopesTwoAndThreeRuleSingleCopiesOutAndSaySo) {
  for (const char* scope : {"2", "3"}) {
    std::string note;
    EXPECT_FALSE(baton::allowPeerAttach(scope, &note)) << scope;
    EXPECT_NE(note.find(std::string("ptrace_scope is ") + scope), std::string::npos) << note;
    EXPECT_NE(note.find("no single copies"), std::string::npos) << note;
  }
}

// Scope 1: the process asks the kernel to let its user's processes attach. On a kernel with Yama
// the call succeeds and the note says so; without Yama the kernel refuses the option (EINVAL), the
// note names the failure, and single copies rely on the same-user rule that holds there anyway.
// In a child, so the test process keeps its own setting.
TEST(CrossMemory, ScopeOneAsksForPtracerAnyAndSaysWhatHappened) {
  const bool yama = !baton::yamaPtraceScope().empty();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string note;
    const bool ok = baton::allowPeerAttach("1", &note);
    if (yama) _exit(ok && note.find("PR_SET_PTRACER_ANY") != std::string::npos ? 0 : 1);
    _exit(!ok && note.find("prctl(PR_SET_PTRACER_ANY) failed") != std::string::npos ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << (yama ? "with Yama: the prctl should succeed and be named"
                                             : "without Yama: the refusal should be named");
  if (!yama) GTEST_SKIP() << "no Yama on this kernel: PR_SET_PTRACER_ANY's effect on a sibling is not checked here";
}

// Where Yama is at scope 1, a sibling (not a descendant) reads a process's probe word only after that
// process asked for PR_SET_PTRACER_ANY. Two children of this test are siblings, as ranks are.
TEST(CrossMemory, SiblingReadsProbeWordAfterTheTargetAllowsIt) {
  const std::string scope = baton::yamaPtraceScope();
  if (scope != "1")
    GTEST_SKIP() << "needs kernel.yama.ptrace_scope 1 (here: " << (scope.empty() ? "no Yama" : scope) << ")";
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t target = fork();
  ASSERT_GE(target, 0);
  if (target == 0) {
    std::string note;
    const char ok = baton::allowPeerAttach(scope, &note) ? 1 : 0;
    (void)!write(ready[1], &ok, 1);
    char c;
    (void)!read(done[0], &c, 1);  // stay alive until the sibling has read
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 1);
  const uint64_t addr = baton::crossMemoryProbeAddress();  // same binary: same address in the sibling
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    std::string why;
    _exit(baton::crossMemoryProbe(target, addr, &why) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  (void)!write(done[1], "x", 1);
  waitpid(target, nullptr, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the sibling could not read after PR_SET_PTRACER_ANY";
}

}  // namespace

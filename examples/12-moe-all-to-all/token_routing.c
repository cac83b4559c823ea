/* Lesson 12: routing MoE tokens to the ranks of their experts with a counts exchange and an
 * AlltoAllv (the common framework recipe, stage 2 of the lesson).
 *
 *   token_routing [RANKS=4] [TOKENS=64]
 *
 * Each rank holds TOKENS tokens of H floats; each token picks K of E = 2 * RANKS experts, expert e
 * living on rank e / 2, and goes once to each rank that hosts one of its experts. A rank sorts its token copies by
 * destination rank, tells every rank how many it will send (ncclAlltoAll of one count each: the host waits for these),
 * then moves the tokens with batonAlltoAllv (baton/alltoallv.h). Every received token is checked against what its
 * source computed for it. One thread drives all ranks inside groups, as nccl-tests does. */
#include <baton/alltoallv.h>
#include <stdint.h>
#include <string.h>

#include "../common.h"

enum { H = 8, K = 2 };

/* Token t of rank r: its j-th expert (a fixed pseudo-random pattern; the K experts of a token
 * differ), and the value of its element h. */
static int expertOf(int r, int t, int j, int nExperts) {
  const int first = (r * 7 + t * 13) % nExperts, step = 1 + t % (nExperts - 1);
  return (first + j * step) % nExperts;
}
/* The rank token t travels to for its j-th expert, or -1 where an earlier expert of the token
 * lives on the same rank: a token goes once to each rank that hosts any of its experts. */
static int destOf(int r, int t, int j, int nExperts) {
  for (int i = 0; i < j; ++i)
    if (expertOf(r, t, i, nExperts) / 2 == expertOf(r, t, j, nExperts) / 2) return -1;
  return expertOf(r, t, j, nExperts) / 2;
}
static float tokenValue(int r, int t, int h) { return (float)(r * 100000 + t * 10 + h); }

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4, tokens = argc > 2 ? atoi(argv[2]) : 64;
  if (n < 1 || n > 64 || tokens < 0) return fprintf(stderr, "usage: token_routing [RANKS 1..64] [TOKENS]\n"), 2;
  const int nExperts = 2 * n;
  ncclComm_t* comms = (ncclComm_t*)calloc(n, sizeof *comms);
  CHECK(ncclCommInitAll(comms, n, NULL));
  size_t* sendCounts = (size_t*)calloc((size_t)n * n, sizeof(size_t)); /* [src][dst], in floats */
  size_t* recvCounts = (size_t*)calloc((size_t)n * n, sizeof(size_t));
  size_t* sendDispls = (size_t*)calloc((size_t)n * n, sizeof(size_t));
  size_t* recvDispls = (size_t*)calloc((size_t)n * n, sizeof(size_t));
  float** send = (float**)calloc(n, sizeof(float*));
  float** recv = (float**)calloc(n, sizeof(float*));

  /* 1. Each rank lays out its token copies by destination rank. */
  for (int r = 0; r < n; ++r) {
    size_t* sc = sendCounts + (size_t)r * n;
    for (int t = 0; t < tokens; ++t)
      for (int j = 0; j < K; ++j)
        if (destOf(r, t, j, nExperts) >= 0) sc[destOf(r, t, j, nExperts)] += H;
    size_t off = 0;
    for (int d = 0; d < n; ++d) sendDispls[(size_t)r * n + d] = off, off += sc[d];
    send[r] = (float*)malloc((off ? off : 1) * sizeof(float));
    size_t* fill = (size_t*)calloc(n, sizeof(size_t));
    for (int t = 0; t < tokens; ++t)
      for (int j = 0; j < K; ++j) {
        const int d = destOf(r, t, j, nExperts);
        if (d < 0) continue;
        float* dst = send[r] + sendDispls[(size_t)r * n + d] + fill[d];
        for (int h = 0; h < H; ++h) dst[h] = tokenValue(r, t, h);
        fill[d] += H;
      }
    free(fill);
  }
  /* 2. The counts exchange: every rank learns how much each peer sends it. */
  CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    CHECK(ncclAlltoAll(sendCounts + (size_t)r * n, recvCounts + (size_t)r * n, 1, ncclUint64, comms[r], NULL));
  CHECK(ncclGroupEnd());
  /* 3. The host sizes the receive side from the counts, then the tokens move. */
  size_t copies = 0;
  for (int r = 0; r < n; ++r) {
    size_t off = 0;
    for (int s = 0; s < n; ++s) recvDispls[(size_t)r * n + s] = off, off += recvCounts[(size_t)r * n + s];
    recv[r] = (float*)malloc((off ? off : 1) * sizeof(float));
    copies += off / H;
  }
  const double t0 = nowSec();
  CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    CHECK(batonAlltoAllv(send[r], sendCounts + (size_t)r * n, sendDispls + (size_t)r * n, recv[r],
                         recvCounts + (size_t)r * n, recvDispls + (size_t)r * n, ncclFloat, comms[r], NULL));
  CHECK(ncclGroupEnd());
  const double secs = nowSec() - t0;

  /* 4. Rank r must hold, from each source s in s's token order, every copy s routed to it. */
  long wrong = 0;
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s) {
      const float* got = recv[r] + recvDispls[(size_t)r * n + s];
      for (int t = 0; t < tokens; ++t)
        for (int j = 0; j < K; ++j) {
          if (destOf(s, t, j, nExperts) != r) continue;
          for (int h = 0; h < H; ++h) wrong += got[h] != tokenValue(s, t, h);
          got += H;
        }
      if (got != recv[r] + recvDispls[(size_t)r * n + s] + recvCounts[(size_t)r * n + s]) ++wrong;
    }
  printf("token routing: %d ranks, %d tokens each, top-%d of %d experts: %zu token copies delivered in %.1f us, %s\n",
         n, tokens, K, nExperts, copies, secs * 1e6, wrong ? "WRONG" : "result OK");
  for (int r = 0; r < n; ++r) {
    printf("rank %d received", r);
    for (int s = 0; s < n; ++s) printf(" %zu", recvCounts[(size_t)r * n + s] / H);
    printf(" tokens (from ranks 0..%d)\n", n - 1);
    free(send[r]), free(recv[r]);
    CHECK(ncclCommDestroy(comms[r]));
  }
  free(send), free(recv), free(sendCounts), free(recvCounts), free(sendDispls), free(recvDispls), free(comms);
  return wrong ? 1 : 0;
}

/* Lesson 15: fewer bits on the wire. One block of 32 values through MXFP8, MXFP4 and NVFP4, bit by
 * bit (the scale each chose, the codes, the values that come back, the error against the bound),
 * then an AllReduce with each wire format over N thread ranks, its error against the exact sum.
 *
 *   wire_formats [ranks] [elements]      (defaults: 4 ranks, 65536 elements)
 *
 * Only the public API: include/baton/lowp.h's codecs and collectives. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "../common.h"
#include "baton/lowp.h"

static const batonWireFormat_t kWires[3] = {batonWireMxfp8, batonWireMxfp4, batonWireNvfp4};

/* A block of 32: small values of mixed size and one outlier, as an activation block looks. */
static float blockValue(int i) { return i == 5 ? -96.f : (float)((i * 37) % 23 - 11) * 0.37f; }

/* Rank r's AllReduce input: the block pattern shifted per rank and scaled per block of 32. */
static float rankValue(int r, size_t i) { return blockValue((int)((i + r * 7) % 32)) * (1.f + (float)(i / 32 % 5)); }

/* An OCP e4m3 byte as a float (NVFP4's block scale). */
static float e4m3(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  float v = e == 15 && m == 7 ? NAN : e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  return b & 128 ? -v : v;
}

static void showBlock(batonWireFormat_t w) {
  float x[32], y[32];
  uint8_t packed[64];
  for (int i = 0; i < 32; ++i) x[i] = blockValue(i);
  CHECK(batonWireQuantize(x, 32, ncclFloat, w, packed));
  CHECK(batonWireDequantize(packed, 32, w, y, ncclFloat));
  float amax = 0, err = 0;
  for (int i = 0; i < 32; ++i) {
    amax = fmaxf(amax, fabsf(x[i]));
    err = fmaxf(err, fabsf(y[i] - x[i]));
  }
  const size_t bytes = batonWireBytes(32, w);
  printf("%s: %zu bytes for 32 floats (128 bytes); ", batonWireName(w), bytes);
  if (w == batonWireNvfp4) {
    float seg;
    memcpy(&seg, packed, 4);
    printf("segment scale %.6g, block scales %g %g (e4m3); ", seg, e4m3(packed[4]), e4m3(packed[5]));
  } else {
    printf("block scale 2^%d (e8m0 byte 0x%02x); ", packed[0] - 127, packed[0]);
  }
  printf("max error %.4g = %.4f of the block's max\n", err, err / amax);
  /* Elements 0-5 (beside the outlier, element 5) and 16-21 (NVFP4's second block of 16). */
  const int shown[12] = {0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 21};
  printf("  x[0..5, 16..21]:");
  for (int k = 0; k < 12; ++k) printf(" %6.2f", x[shown[k]]);
  printf("\n  decoded:        ");
  for (int k = 0; k < 12; ++k) printf(" %6.2f", y[shown[k]]);
  printf("\n");
}

struct Rank {
  ncclComm_t comm;
  batonWireFormat_t wire;
  float *in, *out;
  size_t count;
  ncclResult_t res;
};

static void* runRank(void* arg) {
  struct Rank* r = (struct Rank*)arg;
  r->res = batonAllReduceWire(r->in, r->out, r->count, ncclFloat, r->wire, ncclSum, r->comm, NULL);
  return NULL;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4;
  const size_t count = argc > 2 ? (size_t)atoll(argv[2]) : 65536;
  if (n < 1 || n > 64 || count < 1) {
    fprintf(stderr, "usage: wire_formats [ranks 1..64] [elements >= 1]\n");
    return 2;
  }
  for (int k = 0; k < 3; ++k) showBlock(kWires[k]);

  ncclComm_t* comms = malloc(n * sizeof *comms);
  struct Rank* ranks = malloc(n * sizeof *ranks);
  pthread_t* th = malloc(n * sizeof *th);
  CHECK(ncclCommInitAll(comms, n, NULL));
  double* exact = malloc(count * sizeof *exact);
  double amax = 0;
  for (size_t i = 0; i < count; ++i) {
    exact[i] = 0;
    for (int r = 0; r < n; ++r) exact[i] += rankValue(r, i);
    amax = fmax(amax, fabs(exact[i]));
  }
  for (int r = 0; r < n; ++r) {
    ranks[r].comm = comms[r], ranks[r].count = count;
    ranks[r].in = malloc(count * sizeof(float)), ranks[r].out = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) ranks[r].in[i] = rankValue(r, i);
  }
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < n; ++r) ranks[r].wire = kWires[k], pthread_create(&th[r], NULL, runRank, &ranks[r]);
    for (int r = 0; r < n; ++r) {
      pthread_join(th[r], NULL);
      CHECK(ranks[r].res);
    }
    double err = 0, sq = 0, xsq = 0;
    int same = 1;
    for (size_t i = 0; i < count; ++i) {
      const double e = fabs(ranks[0].out[i] - exact[i]);
      err = fmax(err, e), sq += e * e, xsq += exact[i] * exact[i];
      for (int r = 1; r < n; ++r) same &= ranks[r].out[i] == ranks[0].out[i];
    }
    printf(
        "allreduce of %zu floats over %d ranks as %s: %.2f bytes per element on the wire, max error %.4f, RMS "
        "error %.4f of the exact sum's max and RMS, every rank the same: %s\n",
        count, n, batonWireName(kWires[k]), (double)batonWireBytes(count, kWires[k]) / count, err / amax,
        sqrt(sq / xsq), same ? "yes" : "NO");
  }
  for (int r = 0; r < n; ++r) free(ranks[r].in), free(ranks[r].out), ncclCommDestroy(comms[r]);
  free(exact), free(th), free(ranks), free(comms);
  return 0;
}

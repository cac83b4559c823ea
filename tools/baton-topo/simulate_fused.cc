// --simulate ag_gemm | gemm_rs: what the fused operations' stages would take on a simulated machine
// (lesson 11). The collective's time is the simulator's (simulate.cc: baton's schedule over the
// topology's links, the fastest algorithm and protocol); the GEMM's is a throughput model,
// 2*M*N*K / (--gemm-tflops), bf16 operands as in the published figures this is set beside.
//
// Per stage, with n ranks, g = the GEMM of one rank's block of rows (gemm / n) and c = one step of
// the collective (its time / (n - 1)):
//   naive       gemm + comm: the collective, then the GEMM;
//   decomposed  the own block's GEMM while block 1 moves, then block s's GEMM once it is here and
//               the GEMM before it is done (transfers back to back), plus a launch per block (2 µs:
//               a kernel per chunk, as PyTorch's async TP runs them);
//   fused       the same recurrence with each block cut in 8 tiles' worth of rows waiting on their
//               own signal, no launches: the GEMM starts on the first rows that arrive.
// The model leaves out what a GPU adds: SMs the copies take from the GEMM, wave quantization of
// small GEMMs, L2 effects. It says how much of the collective is hidden, not how fast cuBLAS is.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "baton_topo.h"
#include "misc/debug.h"

namespace batontopo {

using namespace baton;

namespace {

struct Shape {
  size_t m, n, k;
};

// Published: yifuwang/symm-mem-recipes (README), AllGather+GEMM on 8xH100 SXM with NVSwitch, bf16:
// cuBLAS alone, cuBLAS after NCCL's AllGather, and its Triton fused kernel, in µs.
struct Published {
  Shape s;
  double mmOnly, unfused, fused;
};
const Published kPublished[] = {{{4096, 1792, 4096}, 105, 230, 213},
                                {{16384, 1792, 4096}, 391, 819, 514},
                                {{8192, 3584, 8192}, 828, 1291, 948},
                                {{16384, 6656, 16384}, 5842, 7801, 6538}};

// Blocks arrive one step after another; each block's GEMM starts when it is here and the previous
// GEMM is done. The first `local` blocks are this rank's own (here from the start).
double pipeline(int blocks, int local, double gemmPerBlock, double stepPerBlock, double launchUs) {
  double arrive = 0, done = 0;
  for (int b = 0; b < blocks; ++b) {
    if (b >= local) arrive += stepPerBlock;
    const double start = std::max(done, arrive);
    done = start + gemmPerBlock + launchUs;
  }
  return done;
}

bool parseShape(const std::string& text, Shape* s) {
  return std::sscanf(text.c_str(), "%zu:%zu:%zu", &s->m, &s->n, &s->k) == 3 && s->m && s->n && s->k;
}

}  // namespace

int simulateFused(const Options& opt, const Machine& m) {
  const bool ag = opt.simulate == "ag_gemm";
  const int n = m.nRanks;
  std::vector<Shape> shapes;
  for (const std::string& t : opt.fusedShapes) {
    Shape s;
    if (!parseShape(t, &s) || s.m % n) {
      std::fprintf(stderr, "baton-topo: --shape '%s' (expected M:N:K with M a multiple of the %d ranks)\n", t.c_str(),
                   n);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty())
    for (const Published& p : kPublished) shapes.push_back(p.s);
  std::printf("# simulate %s: %s, %d ranks; GEMM model %.0f TFLOP/s per rank (bf16); %s of the bf16 %s\n",
              opt.simulate.c_str(), m.source.c_str(), n, opt.gemmTflops, ag ? "AllGather" : "ReduceScatter",
              ag ? "rows of A [M x K]" : "partials [M x N]");
  std::printf("# times in us; naive = gemm + comm, decomposed = one block per rank, fused = 8 signals per block\n");
  std::printf("#%6s %6s %6s %9s %9s %9s %11s %9s %10s\n", "M", "N", "K", "gemm", "comm", "naive", "decomposed", "fused",
              "fused/naive");
  for (const Shape& s : shapes) {
    const size_t bytes = (ag ? s.m * s.k : s.m * s.n) * 2;
    double commUs = 0;
    if (simulateBestUs(m, ag ? kFuncAllGather : kFuncReduceScatter, bytes, opt.splitTree, &commUs) != ncclSuccess) {
      std::fprintf(stderr, "baton-topo: %s\n", lastError());
      return 1;
    }
    const double gemmUs = 2.0 * double(s.m) * double(s.n) * double(s.k) / (opt.gemmTflops * 1e6);
    const double naive = gemmUs + commUs;
    const double step = n > 1 ? commUs / (n - 1) : 0;
    const double decomposed = pipeline(n, 1, gemmUs / n, step, 2.0);
    const int tiles = 8;
    const double fused = pipeline(n * tiles, tiles, gemmUs / (n * tiles), step / tiles, 0.0);
    std::printf(" %6zu %6zu %6zu %9.0f %9.0f %9.0f %11.0f %9.0f %10.2f\n", s.m, s.n, s.k, gemmUs, commUs, naive,
                decomposed, fused, fused / naive);
  }
  if (ag && opt.fusedShapes.empty()) {
    std::printf(
        "# published (yifuwang/symm-mem-recipes, 8xH100 SXM, NVSwitch, bf16): cuBLAS alone, cuBLAS after\n"
        "# NCCL's AllGather, the Triton fused kernel; fused/unfused\n");
    for (const Published& p : kPublished)
      std::printf("# %6zu %6zu %6zu %9.0f %9.0f %9.0f %11s %9.0f %10.2f\n", p.s.m, p.s.n, p.s.k, p.mmOnly,
                  p.unfused - p.mmOnly, p.unfused, "", p.fused, p.fused / p.unfused);
  }
  return 0;
}

}  // namespace batontopo

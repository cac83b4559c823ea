// BATON_HD: how a function of the device-portable code is declared, so one body compiles for the
// CPU backend (an inline function) and under nvcc for both sides (__host__ __device__).
//
// Computes nothing. Memory-ordering contract: none.
#pragma once

#ifdef __CUDACC__
#define BATON_HD __host__ __device__ __forceinline__
#else
#define BATON_HD inline
#endif

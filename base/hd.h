// VH_HD marks per-point math compiled for both host and device (CUDA), empty elsewhere: the one
// spelling for every module (src/core, fmm, spectral, vortex; base/CMakeLists.txt says why it
// lives here).
//
// add_rn, sub_rn, mul_rn, sqrt_rn: one IEEE operation rounded to nearest, which nvcc never fuses
// into a multiply-add (__dadd_rn and friends on the device; the host's ISO C++ build does not
// contract), for math whose host and device results must agree bit for bit (fmm/morton.h,
// fmm/traverse_kernel.h).
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define VH_HD __host__ __device__
#else
#define VH_HD
#endif

namespace vh {

#if defined(__CUDA_ARCH__)
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline double sqrt_rn(double a) { return __dsqrt_rn(a); }
#else
inline double add_rn(double a, double b) { return a + b; }
inline double sub_rn(double a, double b) { return a - b; }
inline double mul_rn(double a, double b) { return a * b; }
inline double sqrt_rn(double a) { return sqrt(a); }
#endif

}  // namespace vh

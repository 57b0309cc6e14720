// cuFFT LTO callbacks (cufftXtSetJITCallback) that fold the per-point work of an evaluation
// into the transforms' own first and last passes over memory (gpu_solver.cu). The device
// functions live in fft_callbacks.cu, compiled to LTO-IR (a fatbin embedded in the library)
// and linked into cuFFT's kernels at plan time by nvJitLink; cuFFT then skips the memory
// traffic of the separate passes they replace:
//
//   load_curl      C2R of ω (3, batched, on buffers 3–5): ω̂_c = (i k × û)_c from buffers 0–2
//                  for the retained modes, 0 elsewhere (buffers 3–5 are never written).
//   load_retained  C2R of u (on buffers 0–2): û as stored for the retained modes, 0 elsewhere
//                  (the buffers' other modes are never cleared).
//   store_cross    C2R of u_z (the last inverse transform, alone in its plan): writes u × ω
//                  over u_x, u_y, u_z at each grid point (no separate u × ω pass).
//   store_retained R2C of u × ω (3, batched, on buffers 0–2): stores the retained modes only.
//
// All of them decode the element's mode from the offset cuFFT passes (complex elements for
// spectra, reals for grid values, counted from the plan's first buffer) with the same
// retained() as the CPU passes (rhs_kernel.h).
#pragma once

#include "spectral/rhs_kernel.h"

namespace vh::spectral::kernel {

/// n / d for 32-bit n and 2 ≤ d < 2³² by one 64-bit multiply-high: ⌊n·⌈2⁶⁴/d⌉ / 2⁶⁴⌋ = ⌊n/d⌋
/// exactly for all 32-bit n (Lemire, Kaser & Kurz 2019). The callbacks decode each
/// element's mode from its offset (three divisions); as integer divisions (64-bit in
/// d7a6ad4, tens of instructions each) they cost more than the memory traffic they save.
struct FastDiv {
  unsigned d;
  unsigned long long magic;  ///< ⌈2⁶⁴/d⌉
  static FastDiv make(unsigned d) { return FastDiv{d, ~0ull / d + 1}; }
#ifdef __CUDACC__
  __device__ unsigned div(unsigned n) const { return unsigned(__umul64hi(magic, n)); }
#endif
};

/// Caller info of every callback (one device copy per solver). Offsets are decoded in
/// 32 bits: the solver uses the callbacks only while 3·dist < 2³² (M ≤ 1200).
struct CallbackInfo {
  Geometry g;
  void* base;                 ///< transform buffer 0 (Cx<T>*); buffer c starts c·dist later
  unsigned long long dist;    ///< complex elements per buffer: M²(M/2+1)
  FastDiv fdist, fmxh, fm;    ///< division by dist, M/2+1 and M
};

/// Names of the callbacks, fp64 and fp32, as given to cufftXtSetJITCallback: unmangled
/// names of C++-linkage functions at global scope (fft_callbacks.cu says why not extern "C").
constexpr const char* kLoadCurlName[2] = {"vh_cb_load_curl_z", "vh_cb_load_curl_c"};
constexpr const char* kLoadRetainedName[2] = {"vh_cb_load_retained_z", "vh_cb_load_retained_c"};
constexpr const char* kStoreCrossName[2] = {"vh_cb_store_cross_d", "vh_cb_store_cross_r"};
constexpr const char* kStoreRetainedName[2] = {"vh_cb_store_retained_z", "vh_cb_store_retained_c"};

}  // namespace vh::spectral::kernel

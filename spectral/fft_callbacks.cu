// Device functions of the cuFFT LTO callbacks (fft_callbacks.h). Compiled on its own to
// LTO-IR (spectral/CMakeLists.txt); never linked into the library as ordinary device code.
#include <cufftXt.h>

#include "spectral/fft_callbacks.h"

namespace vh::spectral::kernel {
namespace {

/// Mode of complex element p (offset within one buffer, M-grid half layout); true when it
/// is in the retained set.
__device__ inline bool retained_mode(const CallbackInfo& ci, unsigned p, int& kx, int& ky, int& kz) {
  const unsigned r = ci.fmxh.div(p), z = ci.fm.div(r);
  kx = int(p - r * ci.fmxh.d);
  ky = signed_k(int(r - z * ci.fm.d), ci.g.m);
  kz = signed_k(int(z), ci.g.m);
  return retained(ci.g, kx, ky, kz);
}

template <class T>
__device__ inline Cx<T> load_curl(unsigned long long o, const CallbackInfo* ci) {
  const unsigned c = ci->fdist.div(unsigned(o)), p = unsigned(o) - c * ci->fdist.d;
  int k[3];
  if (!retained_mode(*ci, p, k[0], k[1], k[2])) return Cx<T>{T(0), T(0)};
  const Cx<T>* u = static_cast<const Cx<T>*>(ci->base);
  const unsigned c1 = c == 2 ? 0 : c + 1, c2 = c == 0 ? 2 : c - 1;
  // (i k × û)_c = i (k_{c+1} û_{c+2} − k_{c+2} û_{c+1}), as curl() in rhs_kernel.h.
  const Cx<T> s = T(k[c1]) * u[c2 * ci->dist + p] - T(k[c2]) * u[c1 * ci->dist + p];
  return Cx<T>{-s.im, s.re};
}

template <class T>
__device__ inline Cx<T> load_retained(const void* in, unsigned long long o, const CallbackInfo* ci) {
  int kx, ky, kz;
  const unsigned p = unsigned(o) - ci->fdist.div(unsigned(o)) * ci->fdist.d;
  if (!retained_mode(*ci, p, kx, ky, kz)) return Cx<T>{T(0), T(0)};
  return static_cast<const Cx<T>*>(in)[o];
}

template <class T>
__device__ inline void store_cross(void* out, unsigned long long o, T uz, const CallbackInfo* ci) {
  T* r = static_cast<T*>(ci->base);
  const unsigned long long d = 2 * ci->dist;  // reals per buffer
  T ux = r[o], uy = r[d + o];
  cross_in_place(ux, uy, uz, r[3 * d + o], r[4 * d + o], r[5 * d + o]);
  r[o] = ux;
  r[d + o] = uy;
  static_cast<T*>(out)[o] = uz;
}

template <class T>
__device__ inline void store_retained(void* out, unsigned long long o, Cx<T> v, const CallbackInfo* ci) {
  int kx, ky, kz;
  const unsigned p = unsigned(o) - ci->fdist.div(unsigned(o)) * ci->fdist.d;
  if (retained_mode(*ci, p, kx, ky, kz)) static_cast<Cx<T>*>(out)[o] = v;
}

template <class V, class T>
__device__ inline V as_v(Cx<T> x) {
  return V{x.re, x.im};
}

}  // namespace
}  // namespace vh::spectral::kernel

using vh::spectral::kernel::CallbackInfo;
using vh::spectral::kernel::Cx;
namespace k = vh::spectral::kernel;

// The entry points: C++ linkage, global namespace, and exactly cuFFT's parameter types
// (void*, unsigned long long, [element,] void*, void*). cuFFT compiles a wrapper with NVRTC
// that declares the named callback as `extern __device__ T name(void*, unsigned long long,
// void*, void*)` in C++ and links it with nvJitLink, so it refers to the *mangled* name
// (_Z17vh_cb_load_curl_zPvyS_S_). extern "C" (as in d7a6ad4), a namespace or another
// parameter type (size_t) leave that symbol unresolved ("ptxas fatal: Unresolved extern
// function") and cufftMakePlan* returns CUFFT_INTERNAL_ERROR (bench/spectral/cufft_lto_probe.cu).

__device__ cufftDoubleComplex vh_cb_load_curl_z(void*, unsigned long long o, void* info, void*) {
  return k::as_v<cufftDoubleComplex>(k::load_curl<double>(o, static_cast<const CallbackInfo*>(info)));
}
__device__ cufftComplex vh_cb_load_curl_c(void*, unsigned long long o, void* info, void*) {
  return k::as_v<cufftComplex>(k::load_curl<float>(o, static_cast<const CallbackInfo*>(info)));
}
__device__ cufftDoubleComplex vh_cb_load_retained_z(void* in, unsigned long long o, void* info, void*) {
  return k::as_v<cufftDoubleComplex>(k::load_retained<double>(in, o, static_cast<const CallbackInfo*>(info)));
}
__device__ cufftComplex vh_cb_load_retained_c(void* in, unsigned long long o, void* info, void*) {
  return k::as_v<cufftComplex>(k::load_retained<float>(in, o, static_cast<const CallbackInfo*>(info)));
}
__device__ void vh_cb_store_cross_d(void* out, unsigned long long o, cufftDoubleReal v, void* info, void*) {
  k::store_cross<double>(out, o, v, static_cast<const CallbackInfo*>(info));
}
__device__ void vh_cb_store_cross_r(void* out, unsigned long long o, cufftReal v, void* info, void*) {
  k::store_cross<float>(out, o, v, static_cast<const CallbackInfo*>(info));
}
__device__ void vh_cb_store_retained_z(void* out, unsigned long long o, cufftDoubleComplex v, void* info, void*) {
  k::store_retained<double>(out, o, Cx<double>{v.x, v.y}, static_cast<const CallbackInfo*>(info));
}
__device__ void vh_cb_store_retained_c(void* out, unsigned long long o, cufftComplex v, void* info, void*) {
  k::store_retained<float>(out, o, Cx<float>{v.x, v.y}, static_cast<const CallbackInfo*>(info));
}

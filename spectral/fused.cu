// Dispatch of the fused GPU passes (fused.h) over the transform sizes instantiated in
// fused_m*.cu, and the test hook run_pass_gpu().
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "core/device.h"
#include "core/error.h"
#include "spectral/fused.h"
#include "spectral/fused_impl.cuh"

// Sizes with kernels (fused_m*.cu): M = N for the 2/3 rule and none, 3N/2 for the 3/2 rule.
#define VH_FUSED_SIZES(X) X(32) X(48) X(64) X(96) X(128) X(192) X(256) X(384) X(512)
#define VH_FUSED_EXTERN(M)                                               \
  extern template struct vh::spectral::fused::detail::Passes<double, M>; \
  extern template struct vh::spectral::fused::detail::Passes<float, M>;
VH_FUSED_SIZES(VH_FUSED_EXTERN)

namespace vh::spectral::fused {

using kernel::Cx;
using kernel::FusedLayout;

bool built() { return true; }

namespace {

bool size_supported(int m) {
#define VH_FUSED_CASE(M) \
  case M: return true;
  switch (m) { VH_FUSED_SIZES(VH_FUSED_CASE) default: return false; }
#undef VH_FUSED_CASE
}

template <class T>
std::size_t max_smem(const FusedLayout& l) {
#define VH_FUSED_CASE(M) \
  case M: return detail::Passes<T, M>::max_smem(l);
  switch (l.g.m) { VH_FUSED_SIZES(VH_FUSED_CASE) default: return 0; }
#undef VH_FUSED_CASE
}

/// VH_FUSED_PROFILE=1: each pass timed with CUDA events (synchronising), totals at exit.
struct Profile {
  bool on = std::getenv("VH_FUSED_PROFILE") != nullptr;
  double ms[5] = {};
  long count[5] = {};
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  ~Profile() {
    if (!on) return;
    const char* names[5] = {"z_inverse", "y_inverse", "x_cross", "y_forward", "z_forward_post"};
    for (int i = 0; i < 5; ++i)
      if (count[i]) std::fprintf(stderr, "fused profile: %-15s %6ld calls %9.3f ms/call\n", names[i], count[i], ms[i] / count[i]);
  }
};
Profile& profile() {
  static Profile p;
  return p;
}

}  // namespace

std::string unsupported_reason(const kernel::Geometry& g, bool single) {
  if (!vh::gpu_available()) return "no GPU visible";
  if (!size_supported(g.m))
    return "no cuFFTDx kernels for transform size M = " + std::to_string(g.m) +
           " (built: 32 48 64 96 128 192 256 384 512)";
  int dev = 0, major = 0, smem = 0;
  VH_CHECK_CUDA(cudaGetDevice(&dev));
  VH_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major != 9) return "the cuFFTDx kernels are built for sm_90 only";
  VH_CHECK_CUDA(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const FusedLayout l = FusedLayout::make(g);
  const std::size_t need = single ? max_smem<float>(l) : max_smem<double>(l);
  if (need > std::size_t(smem))
    return "needs " + std::to_string(need) + " B of shared memory per block, the device has " + std::to_string(smem);
  return "";
}

template <class T>
void launch(Pass p, const FusedLayout& l, int stage, bool expl, T nu, T dt, const kernel::StageArrays<T>& arr,
            Cx<T>* zb, Cx<T>* zt, Cx<T>* yb, void* stream, Part part) {
  auto st = static_cast<cudaStream_t>(stream);
  Profile& prof = profile();
  if (prof.on) {
    if (!prof.e0) {
      VH_CHECK_CUDA(cudaEventCreate(&prof.e0));
      VH_CHECK_CUDA(cudaEventCreate(&prof.e1));
    }
    VH_CHECK_CUDA(cudaEventRecord(prof.e0, st));
  }
  switch (l.g.m) {
#define VH_FUSED_CASE(M)                                                       \
  case M:                                                                      \
    detail::Passes<T, M>::run(p, l, stage, expl, nu, dt, arr, zb, zt, yb, st, part); \
    break;
    VH_FUSED_SIZES(VH_FUSED_CASE)
#undef VH_FUSED_CASE
    default:
      throw vh::InputError("fused transforms: no kernels for M = " + std::to_string(l.g.m));
  }
  if (prof.on) {
    VH_CHECK_CUDA(cudaEventRecord(prof.e1, st));
    VH_CHECK_CUDA(cudaEventSynchronize(prof.e1));
    float ms = 0;
    VH_CHECK_CUDA(cudaEventElapsedTime(&ms, prof.e0, prof.e1));
    prof.ms[int(p)] += ms;
    ++prof.count[int(p)];
  }
}
template void launch<double>(Pass, const FusedLayout&, int, bool, double, double,
                             const kernel::StageArrays<double>&, Cx<double>*, Cx<double>*, Cx<double>*, void*,
                             Part);
template void launch<float>(Pass, const FusedLayout&, int, bool, float, float, const kernel::StageArrays<float>&,
                            Cx<float>*, Cx<float>*, Cx<float>*, void*, Part);

void run_pass_gpu(Pass p, const kernel::Geometry& g, const StageArgs& s, HostArrays& h) {
  const std::string why = unsupported_reason(g, false);
  if (!why.empty()) throw vh::InputError("fused transforms: " + why);
  const FusedLayout l = FusedLayout::make(g);
  h.zb.resize(l.zb_size());
  h.yb.resize(l.yb_size());
  const std::size_t nm = std::size_t(g.n) * g.n * g.nxh();
  if (h.acc.empty()) h.acc.assign(3 * nm, Cx<double>{0, 0});
  if (h.a.empty()) h.a.assign(3 * nm, Cx<double>{0, 0});
  std::vector<Cx<double>>* host[5] = {&h.u0, &h.acc, &h.a, &h.zb, &h.yb};
  vh::DeviceArray<Cx<double>> mem[5];
  Cx<double>* dev[5] = {};
  for (int i = 0; i < 5; ++i) {
    mem[i].upload(*host[i]);
    dev[i] = mem[i].data();
  }
  kernel::StageArrays<double> arr{};
  for (int c = 0; c < 3; ++c) {
    arr.u0[c] = dev[0] + c * nm;
    arr.acc[c] = dev[1] + c * nm;
    arr.a[c] = dev[2] + c * nm;
  }
  launch<double>(p, l, s.stage, s.explicit_visc, s.nu, s.dt, arr, dev[3], dev[3], dev[4], nullptr);
  VH_CHECK_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < 5; ++i) mem[i].download(host[i]->data(), host[i]->size());
}

}  // namespace vh::spectral::fused

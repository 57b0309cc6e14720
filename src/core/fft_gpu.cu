#include "core/fft_gpu.h"

#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "base/device_comm.h"
#include "base/launch.h"

namespace vh {
namespace {

constexpr int kThreads = 256;
unsigned blocks_for(std::size_t n) { return vh::blocks_for(static_cast<long long>(n), kThreads, 1 << 20); }

/// The b side's messages into the rank's [z][ky][kx] planes (`into_planes`) or out of them,
/// value by value: SlabFft::Plans' pack and unpack (core/slab.h transpose_b_index).
__global__ void __launch_bounds__(kThreads)
    transpose_rows_kernel(std::size_t n, int nxh, const int* rows, bool into_planes, double2* planes, double2* msg) {
  for (std::size_t q = blockIdx.x * std::size_t(kThreads) + threadIdx.x; q < n; q += std::size_t(gridDim.x) * kThreads) {
    const std::size_t b = transpose_b_index(rows, nxh, q);
    if (into_planes)
      planes[b] = msg[q];
    else
      msg[q] = planes[b];
  }
}

__global__ void __launch_bounds__(kThreads) scale_kernel(std::size_t n, double s, double2* c) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads) {
    c[i].x *= s;
    c[i].y *= s;
  }
}

struct Plan {
  cufftHandle h = 0;
  std::size_t work = 0;
  Plan() { VH_CHECK_CUFFT(cufftCreate(&h)); }  // a handle that failed throws: no destructor then
  ~Plan() { cufftDestroy(h); }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
};

cufftDoubleComplex* cx(Complex* c) { return reinterpret_cast<cufftDoubleComplex*>(c); }
cufftDoubleComplex* cx(const Complex* c) { return reinterpret_cast<cufftDoubleComplex*>(const_cast<Complex*>(c)); }

}  // namespace

struct GpuSlabFft::Impl {
  DeviceComm* dc = nullptr;
  std::size_t nm = 0, nb = 0, nmsg = 0;  // the rank's modes, its planes' modes, message values
  int nxh = 0;
  SlabTranspose t;
  DeviceArray<int> rows;
  DeviceArray<Complex> a, b, send, recv;  // one rank: a holds the inverse's copy of c
  // One rank: fwd, inv the 3-D plans. R > 1: fwd, inv the 2-D plans over the planes, zf, zi
  // the z lines of the a side.
  Plan fwd, inv, zf, zi;
};

GpuSlabFft::GpuSlabFft(const Slab& s, DeviceComm* dc) : slab_(s), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const int n = s.grid.n, nxh = n / 2 + 1;
  m.dc = dc;
  m.nxh = nxh;
  m.nm = s.local_modes();
  m.a.resize(std::max<std::size_t>(m.nm, 1));
  if (s.whole()) {
    VH_CHECK_CUFFT(cufftMakePlan3d(m.fwd.h, n, n, n, CUFFT_D2Z, &m.fwd.work));
    VH_CHECK_CUFFT(cufftMakePlan3d(m.inv.h, n, n, n, CUFFT_Z2D, &m.inv.work));
    return;
  }
  VH_CHECK(dc != nullptr, "GpuSlabFft on several ranks needs their DeviceComm");
  m.t = slab_transpose(s);
  m.rows.upload(m.t.rows);
  m.nb = std::size_t(s.nz) * n * nxh;
  m.nmsg = m.t.rows.size() * nxh;
  m.b.resize(m.nb);
  m.send.resize(m.nmsg);
  m.recv.resize(m.nmsg);
  // y and x of every plane: 2-D transforms, [z][y][x] real against [z][ky][kx] complex.
  int nn[2] = {n, n}, real[2] = {n, n}, half[2] = {n, nxh};
  VH_CHECK_CUFFT(cufftMakePlanMany(m.fwd.h, 2, nn, real, 1, n * n, half, 1, n * nxh, CUFFT_D2Z, s.nz, &m.fwd.work));
  VH_CHECK_CUFFT(cufftMakePlanMany(m.inv.h, 2, nn, half, 1, n * nxh, real, 1, n * n, CUFFT_Z2D, s.nz, &m.inv.work));
  // z: lines of the a side, stride slots·(N/2 + 1), one per (slot, kx), as SlabFft's.
  const int zs = s.slots() * nxh;
  int nz[1] = {n};
  VH_CHECK_CUFFT(cufftMakePlanMany(m.zf.h, 1, nz, nz, zs, 1, nz, zs, 1, CUFFT_Z2Z, zs, &m.zf.work));
  VH_CHECK_CUFFT(cufftMakePlanMany(m.zi.h, 1, nz, nz, zs, 1, nz, zs, 1, CUFFT_Z2Z, zs, &m.zi.work));
}

GpuSlabFft::~GpuSlabFft() = default;

void GpuSlabFft::forward(const double* u, Complex* c, double scale) {
  Impl& m = *impl_;
  if (slab_.whole()) {
    VH_CHECK_CUFFT(cufftExecD2Z(m.fwd.h, const_cast<double*>(u), cx(c)));
  } else {
    VH_CHECK_CUFFT(cufftExecD2Z(m.fwd.h, const_cast<double*>(u), cx(m.b.data())));
    transpose_rows_kernel<<<blocks_for(m.nmsg), kThreads>>>(m.nmsg, m.nxh, m.rows.data(), false,
                                                             reinterpret_cast<double2*>(m.b.data()),
                                                             reinterpret_cast<double2*>(m.send.data()));
    VH_CHECK_LAUNCH();
    m.dc->alltoallv(m.send.data(), m.t.b_counts, m.t.b_displs, m.a.data(), m.t.a_counts, m.t.a_displs,
                    sizeof(Complex));
    VH_CHECK_CUFFT(cufftExecZ2Z(m.zf.h, cx(m.a.data()), cx(c), CUFFT_FORWARD));
  }
  if (scale != 1.0) {
    scale_kernel<<<blocks_for(m.nm), kThreads>>>(m.nm, scale, reinterpret_cast<double2*>(c));
    VH_CHECK_LAUNCH();
  }
}

void GpuSlabFft::inverse(const Complex* c, double* u) {
  Impl& m = *impl_;
  if (slab_.whole()) {  // cuFFT's c2r overwrites its input: it reads a copy
    VH_CHECK_CUDA(cudaMemcpyAsync(m.a.data(), c, m.nm * sizeof(Complex), cudaMemcpyDeviceToDevice));
    VH_CHECK_CUFFT(cufftExecZ2D(m.inv.h, cx(m.a.data()), u));
    return;
  }
  VH_CHECK_CUFFT(cufftExecZ2Z(m.zi.h, cx(c), cx(m.a.data()), CUFFT_INVERSE));
  m.dc->alltoallv(m.a.data(), m.t.a_counts, m.t.a_displs, m.recv.data(), m.t.b_counts, m.t.b_displs, sizeof(Complex));
  transpose_rows_kernel<<<blocks_for(m.nmsg), kThreads>>>(m.nmsg, m.nxh, m.rows.data(), true,
                                                           reinterpret_cast<double2*>(m.b.data()),
                                                           reinterpret_cast<double2*>(m.recv.data()));
  VH_CHECK_LAUNCH();
  VH_CHECK_CUFFT(cufftExecZ2D(m.inv.h, cx(m.b.data()), u));
}

std::size_t GpuSlabFft::device_bytes() const {
  const Impl& m = *impl_;
  std::size_t w = m.rows.bytes() + m.a.bytes() + m.b.bytes() + m.send.bytes() + m.recv.bytes();
  for (const Plan* p : {&m.fwd, &m.inv, &m.zf, &m.zi}) w += p->work;
  return w;
}

}  // namespace vh

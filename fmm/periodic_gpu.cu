// The periodic terms on the GPU without a host round trip (fmm/periodic.h): the far lattice's
// M2L into the root from the root multipole, and the sums Q and D of the mean correction.  Both
// run the host's operations in the host's order (fmm/expansions_kernel.h m2l_table_sum and
// m2m_table_sum, mean_terms' chunks of 4096), and this file is compiled without contracted
// multiply-adds (-fmad=false, fmm/CMakeLists.txt), so they give the host's bits.  A few
// microseconds each: one block for the lattice, one thread per chunk for the sums.
#include <vector>

#include "base/cuda_check.h"
#include "fmm/far_gpu.h"
#include "fmm/far_gpu_device.h"
#include "fmm/periodic.h"

namespace vh::fmm {

namespace {

// One block: per lattice level k, the M2L with the summed table T_k into Lroot (m2l_table: the
// table and the folded multipole in the full layout, then one output (l, m) per thread, three
// components) and M <- M2M with S_k (m2m_table: one output (a, l, m) per thread, added to zero).
// work: 12 ncoef(p) + 8 (p + 1)^2 doubles.
__global__ void lattice_kernel(int p, int images, const double* __restrict__ T, const double* __restrict__ S,
                               const double* __restrict__ Mroot, double* __restrict__ Lroot, double* __restrict__ work) {
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double* M = work;          // [3][nc] pairs
  double* Mn = M + 6 * nc;   // [3][nc] pairs
  double* Ir = Mn + 6 * nc;  // [nf]
  double* Ii = Ir + nf;
  double* Mr = Ii + nf;      // [3][nf]
  double* Mi = Mr + 3 * nf;
  for (int t = threadIdx.x; t < 6 * nc; t += blockDim.x) M[t] = Mroot[t];
  __syncthreads();
  for (int k = 0; k < images; ++k) {
    const double* Tk = T + 2 * static_cast<long long>(k) * nc;
    const double* Sk = S + 2 * static_cast<long long>(k) * nc;
    for (int f = threadIdx.x; f < nf; f += blockDim.x) m2l_operands(f, nc, nf, Tk, M, Ir, Ii, Mr, Mi);
    __syncthreads();
    for (int c = threadIdx.x; c < nc; c += blockDim.x) {
      int l, m;
      lm_of(c, l, m);
      double sr[3], si[3];
      m2l_table_sum(p, l, m, Ir, Ii, Mr, Mi, nf, sr, si);
      for (int a = 0; a < 3; ++a) {
        Lroot[2 * (a * nc + c)] += sr[a];
        Lroot[2 * (a * nc + c) + 1] += si[a];
      }
    }
    for (int t = threadIdx.x; t < 3 * nc; t += blockDim.x) {
      const int a = t / nc, c = t - a * nc;
      int l, m;
      lm_of(c, l, m);
      double sr, si;
      m2m_table_sum(Sk, M + 2 * a * nc, l, m, sr, si);
      Mn[2 * t] = 0.0 + sr;
      Mn[2 * t + 1] = 0.0 + si;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < 6 * nc; t += blockDim.x) M[t] = Mn[t];
    __syncthreads();
  }
}

// One warp per chunk of kMeanChunk sorted sources: the lanes load 32 consecutive sources and
// form each one's terms (a and r x a, the host's operations), then lane 0 adds them in source
// order, taking them from the lanes by shuffles: the host's sums, bit for bit, with coalesced
// loads and 32 times the threads of one per chunk.
__global__ void mean_chunks_kernel(int n, int nchunk, const double4_32a* __restrict__ x,
                                   const double4_32a* __restrict__ alpha, const int* __restrict__ mask,
                                   MeanTerms* __restrict__ part) {
  const int k = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (k >= nchunk) return;  // whole warp
  const double c = 0.5 * 6.283185307179586476925286766559;  // the box centre (kBoxLength / 2)
  MeanTerms t;
  const long long begin = static_cast<long long>(k) * kMeanChunk;
  const long long end = min(static_cast<long long>(n), begin + kMeanChunk);
  for (long long q0 = begin; q0 < end; q0 += 32) {
    const long long q = q0 + lane;
    double v[6] = {0, 0, 0, 0, 0, 0};  // a, then the terms of D
    if (q < end && (!mask || mask[q])) {
      const double4_32a xq = x[q], a = alpha[q];
      const double r[3] = {xq.x - c, xq.y - c, xq.z - c}, ad[3] = {a.x, a.y, a.z};
      mean_source_terms(r, ad, v);
    }
    const int m = static_cast<int>(min(32LL, end - q0));
    for (int i = 0; i < m; ++i) {
      double w[6];
      for (int d = 0; d < 6; ++d) w[d] = __shfl_sync(0xffffffffu, v[d], i);
      for (int d = 0; d < 3; ++d) {
        t.Q[d] += w[d];
        t.D[d] += w[3 + d];
      }
    }
  }
  if (lane == 0) part[k] = t;
}

__global__ void mean_sum_kernel(int nchunk, const MeanTerms* __restrict__ part, MeanTerms* __restrict__ out) {
  MeanTerms m;
  for (int k = 0; k < nchunk; ++k)
    for (int d = 0; d < 3; ++d) {
      m.Q[d] += part[k].Q[d];
      m.D[d] += part[k].D[d];
    }
  *out = m;
}

}  // namespace

int lattice_work_doubles(int p) { return 12 * cidx(p + 1, 0) + 8 * (p + 1) * (p + 1); }

void LatticeDevice::set(int p_, int r0_, int images_) {
  if (p_ == p && r0_ == r0 && images_ == images) return;
  const LatticeTables& tb = lattice_tables(p_, r0_, images_);
  const int nc = cidx(p_ + 1, 0);
  std::vector<cplx> t(static_cast<std::size_t>(images_) * nc), s(t.size());
  for (int k = 0; k < images_; ++k)
    for (int c = 0; c < nc; ++c) {
      t[static_cast<std::size_t>(k) * nc + c] = tb.T[k][c];
      s[static_cast<std::size_t>(k) * nc + c] = tb.S[k][c];
    }
  static_assert(sizeof(cplx) == sizeof(double2), "(re, im) pairs");
  T.upload(reinterpret_cast<const double2*>(t.data()), t.size());
  S.upload(reinterpret_cast<const double2*>(s.data()), s.size());
  p = p_;
  r0 = r0_;
  images = images_;
}

void lattice_m2l_device(const LatticeDevice& t, const double2* Mroot, double2* Lroot, DeviceArray<double>& work,
                        cudaStream_t s) {
  if (t.images <= 0) return;
  work.reserve(lattice_work_doubles(t.p));
  lattice_kernel<<<1, 256, 0, s>>>(t.p, t.images, reinterpret_cast<const double*>(t.T.data()),
                                   reinterpret_cast<const double*>(t.S.data()),
                                   reinterpret_cast<const double*>(Mroot), reinterpret_cast<double*>(Lroot),
                                   work.data());
  VH_CHECK_LAUNCH();
}

void mean_terms_device(int n, const double4_32a* x, const double4_32a* alpha, MeanTerms* out,
                       DeviceArray<MeanTerms>& part, cudaStream_t s, const int* mask) {
  const int nchunk = (n + kMeanChunk - 1) / kMeanChunk;
  part.reserve(std::max(1, nchunk));
  if (nchunk > 0) {
    mean_chunks_kernel<<<(nchunk + 3) / 4, 128, 0, s>>>(n, nchunk, x, alpha, mask, part.data());
    VH_CHECK_LAUNCH();
  }
  mean_sum_kernel<<<1, 1, 0, s>>>(nchunk, part.data(), out);
  VH_CHECK_LAUNCH();
}

// Host wrappers for the tests (far_gpu.h).
void lattice_m2l_gpu(int p, int r0, int images, const cplx* Mroot, cplx* Lroot) {
  const int nc = cidx(p + 1, 0);
  LatticeDevice t;
  t.set(p, r0, images);
  DeviceArray<double2> m, l;
  DeviceArray<double> work;
  m.upload(reinterpret_cast<const double2*>(Mroot), 3 * nc);
  l.upload(reinterpret_cast<const double2*>(Lroot), 3 * nc);
  lattice_m2l_device(t, m.data(), l.data(), work, 0);
  l.download(reinterpret_cast<double2*>(Lroot), 3 * nc);
}

MeanTerms mean_terms_gpu(const std::vector<Vec3>& xs, const std::vector<Vec3>& alpha) {
  if (xs.size() != alpha.size()) throw std::invalid_argument("mean_terms_gpu: x and alpha differ in length");
  DeviceArray<double4_32a> x, a;
  DeviceArray<MeanTerms> part, out(1);
  x.upload_with(xs.size(), [&](std::ptrdiff_t i) { return make_double4_32a(xs[i][0], xs[i][1], xs[i][2], 0.0); });
  a.upload_with(alpha.size(), [&](std::ptrdiff_t i) {
    return make_double4_32a(alpha[i][0], alpha[i][1], alpha[i][2], 0.0);
  });
  mean_terms_device(static_cast<int>(xs.size()), x.data(), a.data(), out.data(), part, 0);
  MeanTerms m;
  out.download(&m, 1);
  return m;
}

}  // namespace vh::fmm

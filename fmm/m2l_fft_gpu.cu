// The M2L of a uniform level by FFTs on the GPU: see m2l_fft_gpu.h.  Layouts (n = 2^level,
// m = n/2, e the z extent (m, or a window's), V = m^2 e, nf = (p+1)^2 full-layout
// coefficients, nc = ncoef(p)):
//   folded multipoles  Mh[((c_s 3 + a) nf + f) V + P]        (forward transforms in place)
//   tables             Kh[(kappa 27 + d) nf + f]             (what one wavenumber reads)
//   local expansions   Lh[((c_t 3 + a) nc + c) V + P]        (backward transforms in place)
// with P = (zl m + py) m + px the parent of the transforms' grid, the level's parent (px, py,
// (zbase + zl) mod m), its child (ix, iy, iz) = 2 (px, py, pz) + parity, and d the index
// of the parities' difference c_s - c_t in {-1, 0, 1}^3 (delta_index): a pair's table depends on
// that difference alone (M2LFftGpu's constructor), so the 64 pairs share 27 tables.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "base/launch.h"
#include "fmm/expansions.h"
#include "fmm/m2l_fft_gpu.h"

namespace vh::fmm {

namespace {

// At most 1024 threads in contract_kernel (m2l_fft_contract_threads): 8 ncoef(p) at p 14.
constexpr int kMaxFftOrder = 14;

struct Plan {
  cufftHandle h = 0;
  bool made = false;
  ~Plan() {
    if (made) cufftDestroy(h);
  }
};

// A batch of `batch` complex transforms of e x m x m contiguous points (z slowest), in place.
void make_plan(Plan& pl, int m, int e, long long batch) {
  int dims[3] = {e, m, m};
  const int v = e * m * m;
  VH_CHECK_CUFFT(cufftPlanMany(&pl.h, 3, dims, nullptr, 1, v, nullptr, 1, v, CUFFT_Z2Z, static_cast<int>(batch)));
  pl.made = true;
}

// The child cell (grid index) of the transforms' parent P (plane zl of the window that starts
// at the level's parent plane zbase) with parity c.
__device__ inline long long child_of(long long P, int c, int m, int zbase) {
  const int n = 2 * m;
  const long long px = P % m, py = P / m % m, pz = (P / m / m + zbase) % m;
  return ((2 * pz + (c >> 2)) * n + (2 * py + ((c >> 1) & 1))) * n + 2 * px + (c & 1);
}

// Mh from the cells' multipoles: (-1)^n conj(M_nm) at every order (stage_full's fold).
__global__ void fold_kernel(int p, long long V, int m, int zbase, const double2* __restrict__ M,
                            const int* __restrict__ grid, double2* __restrict__ Mh) {
  const int nf = (p + 1) * (p + 1), nc = (p + 1) * (p + 2) / 2;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= 24LL * nf * V) return;
  const long long P = i % V, r = i / V;
  const int f = static_cast<int>(r % nf), a = static_cast<int>(r / nf % 3), cs = static_cast<int>(r / nf / 3);
  const int n = degree_of(f), mo = f - n * n - n;
  const long long cell = grid[child_of(P, cs, m, zbase)];
  if (cell < 0) {  // a cell whose multipole no target of the window reads (kept nowhere)
    Mh[i] = make_double2(0, 0);
    return;
  }
  double2 v = M[cell * 3 * nc + a * nc + cidx(n, mo < 0 ? -mo : mo)];
  if (mo < 0) negm(-mo, v.x, v.y);
  m2l_fold(n, v.x, v.y);
  Mh[i] = v;
}

// The index 0..26 of a parity difference c_s - c_t, (d_x + 1) + 3 (d_y + 1) + 9 (d_z + 1).
__host__ __device__ inline int delta_index(int cs, int ct) {
  int d = 0;
  for (int q = 2; q >= 0; --q) d = 3 * d + ((cs >> q) & 1) - ((ct >> q) & 1) + 1;
  return d;
}

// One block a wavenumber, one thread per (c_t, output c) (m2l_fft_contract_slot): for each c_s
// in turn the block stages the folded multipoles and the 8 tables of (c_s, c_t = 0..7) as
// (re, im) pairs, then each thread adds m2l_table_terms.  A pair is one 16-byte load; the
// multipole's, the same address in every lane, is one broadcast.
__device__ __forceinline__ void contract(int p, long long V, const double2* __restrict__ Mh,
                                         const double2* __restrict__ Kh, double2* __restrict__ Lh) {
  extern __shared__ double2 sh2[];
  const int nf = (p + 1) * (p + 1), nc = (p + 1) * (p + 2) / 2;
  double2* I = sh2;          // [8][nf]
  double2* Ms = I + 8 * nf;  // [3][nf]
  const long long k = blockIdx.x;
  const int t = threadIdx.x;
  int ct, l, mo;
  m2l_fft_contract_slot(p, t, ct, l, mo);
  const int c = cidx(l, mo);
  const double2* It = I + (ct < 8 ? ct : 0) * nf;
  double ar[3] = {0, 0, 0}, ai[3] = {0, 0, 0};
  for (int cs = 0; cs < 8; ++cs) {
    __syncthreads();
    const double2* K = Kh + k * 27 * nf;
    for (int e = t; e < 8 * nf; e += blockDim.x) {
      const int et = e / nf;
      I[e] = K[delta_index(cs, et) * nf + e - et * nf];
    }
    for (int e = t; e < 3 * nf; e += blockDim.x) Ms[e] = Mh[(cs * 3LL * nf + e) * V + k];
    __syncthreads();
    if (ct < 8) {
      double sr[3], si[3];
      m2l_table_terms(
          p, l, mo,
          [&](int f, double& re, double& im) {
            const double2 v = It[f];
            re = v.x;
            im = v.y;
          },
          [&](int a, int f, double& re, double& im) {
            const double2 v = Ms[a * nf + f];
            re = v.x;
            im = v.y;
          },
          sr, si);
      for (int a = 0; a < 3; ++a) {
        ar[a] += sr[a];
        ai[a] += si[a];
      }
    }
  }
  if (ct < 8)
    for (int a = 0; a < 3; ++a) Lh[((ct * 3LL + a) * nc + c) * V + k] = make_double2(ar[a], ai[a]);
}

__global__ void contract_kernel(int p, long long V, const double2* __restrict__ Mh, const double2* __restrict__ Kh,
                                double2* __restrict__ Lh) {
  contract(p, V, Mh, Kh, Lh);
}

// p 12 to 14 (more than 768 threads): registers capped so that the block fits an SM.
__global__ void __launch_bounds__(1024) contract_kernel_wide(int p, long long V, const double2* __restrict__ Mh,
                                                             const double2* __restrict__ Kh,
                                                             double2* __restrict__ Lh) {
  contract(p, V, Mh, Kh, Lh);
}

// L += Lh / V at the cells of the target parent planes z0, z0 + 1, ..., z0 + nz - 1 (mod m),
// plane zl = (pz - zbase) mod m of the transforms.
__global__ void scatter_kernel(int p, long long V, int m, int zbase, int z0, int nz, const double2* __restrict__ Lh,
                               const int* __restrict__ grid, double2* __restrict__ L) {
  const int nc = (p + 1) * (p + 2) / 2;
  const long long W = static_cast<long long>(m) * m * nz;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= 24LL * nc * W) return;
  const long long Q = i % W, r = i / W;
  const int c = static_cast<int>(r % nc), a = static_cast<int>(r / nc % 3), ct = static_cast<int>(r / nc / 3);
  const long long zl = ((z0 + Q / m / m - zbase) % m + m) % m, P = zl * m * m + Q % (static_cast<long long>(m) * m);
  const long long cell = grid[child_of(P, ct, m, zbase)];
  if (cell < 0) return;  // never for the target planes' cells
  double2& o = L[cell * 3 * nc + a * nc + c];
  const double s = 1.0 / static_cast<double>(V);
  const double2 v = Lh[r * V + P];
  o.x += v.x * s;
  o.y += v.y * s;
}

// D[idx[e] - lo] = val[e] (distinct indices) for the entries e of [first, last).
__global__ void place_kernel(long long first, long long last, long long lo, const long long* __restrict__ idx,
                             const double2* __restrict__ val, double2* __restrict__ D) {
  const long long e = first + blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (e < last) D[idx[e] - lo] = val[e];
}

// Kh's tables of the differences d0 .. d0 + k - 1 from their transforms D[((d - d0) nf + f) V +
// kappa].
__global__ void transpose_kernel(int nf, long long V, int d0, int k, const double2* __restrict__ D,
                                 double2* __restrict__ Kh) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(k) * nf * V) return;
  const int f = static_cast<int>(i % nf), dl = static_cast<int>(i / nf % k);
  const long long kappa = i / nf / k;
  Kh[(kappa * 27 + d0 + dl) * nf + f] = D[(dl * static_cast<long long>(nf) + f) * V + kappa];
}

int mod(int a, int b) { return ((a % b) + b) % b; }

}  // namespace

struct M2LFftGpu::Impl {
  int p = 0, nf = 0, nc = 0, m = 0, e = 0;  // e: the z extent of the transforms
  ParentReach reach;
  long long V = 0;
  DeviceArray<double2> Kh, Mh, Lh;
  Plan fwd, inv;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  float ms = 0;
  ~Impl() {
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
  }
};

M2LFftGpu::M2LFftGpu(int p, double side, const LevelStencil& st, int extent) : impl_(std::make_unique<Impl>()) {
  if (p < 1 || p > kMaxFftOrder) throw std::invalid_argument("M2LFftGpu: p = " + std::to_string(p) + " outside 1..14");
  if (st.level < 2 || st.level > 8)
    throw std::invalid_argument("M2LFftGpu: level " + std::to_string(st.level) + " outside 2..8");
  Impl& d = *impl_;
  d.p = p;
  d.nf = (p + 1) * (p + 1);
  d.nc = (p + 1) * (p + 2) / 2;
  d.m = 1 << (st.level - 1);
  d.reach = parent_z_reach(st);
  d.e = extent > 0 ? extent : d.m;
  if (d.e > d.m || (d.e < d.m && d.e <= d.reach.hi - d.reach.lo))
    throw std::invalid_argument("M2LFftGpu: a z extent of " + std::to_string(extent) + " parent planes at level " +
                                std::to_string(st.level) + "; allowed: " + std::to_string(d.reach.hi - d.reach.lo + 1) +
                                " to " + std::to_string(d.m));
  d.V = static_cast<long long>(d.m) * d.m * d.e;
  if (27LL * d.nf * d.V > INT_MAX)
    throw std::invalid_argument("M2LFftGpu: level " + std::to_string(st.level) + " at p = " + std::to_string(p) +
                                " exceeds one transform batch");
  const int n = 2 * d.m, nf = d.nf;
  const double h = side / n;

  // The tables in real space, images of one (c_s - c_t, T) summed (in stencil order; T folded
  // mod m in x and y, mod e in z, where a window's offsets stay apart: e > hi - lo). Parity c_t
  // takes the source (P + T, c_s) where t = 2 T + c_s - c_t is far and T is not (level_stencil.h):
  // a rule of T and the difference c_s - c_t alone, so the pairs of one difference (2^z of them,
  // z its zero components) take the same offsets and the same table. Each table is summed from
  // the pair whose c_t is 1 where the difference is -1 and 0 elsewhere, after checking that
  // every pair of that difference lists the same offsets in the same order.
  std::map<long long, std::vector<std::array<int, 3>>> taken;  // (c_t, difference, T) -> offsets
  auto key_of = [&](int dd, const int T[3]) {
    return dd * d.V + (static_cast<long long>(T[2]) * d.m + T[1]) * d.m + T[0];
  };
  auto source_of = [&](int ct, const std::array<int, 3>& t, int T[3]) {
    int cs = 0;
    for (int q = 0; q < 3; ++q) {
      const int j = ((ct >> q) & 1) + t[q], b = mod(j, 2);
      cs |= b << q;
      T[q] = mod((j - b) / 2, q == 2 ? d.e : d.m);
    }
    return cs;
  };
  for (int ct = 0; ct < 8; ++ct)
    for (const auto& t : st.offsets[ct]) {
      int T[3];
      const int cs = source_of(ct, t, T);
      taken[ct * 27 * d.V + key_of(delta_index(cs, ct), T)].push_back(t);
    }
  auto representative = [](int dd) {  // c_t of the difference dd's pair that builds its table
    int ct = 0;
    for (int q = 0, r = dd; q < 3; ++q, r /= 3) ct |= (r % 3 == 0 ? 1 : 0) << q;
    return ct;
  };
  for (const auto& [key, ts] : taken) {  // both ways: every pair's entries are its representative's
    const long long dk = key % (27 * d.V);
    const int ct = static_cast<int>(key / (27 * d.V)), dd = static_cast<int>(dk / d.V);
    for (int other = 0; other < 8; ++other) {
      bool same_difference = true;  // (other, other + difference) a pair of parities
      for (int q = 0, r = dd; q < 3; ++q, r /= 3) {
        const int cs_q = ((other >> q) & 1) + r % 3 - 1;
        same_difference = same_difference && cs_q >= 0 && cs_q <= 1;
      }
      const auto it = taken.find(other * 27 * d.V + dk);
      if (same_difference && (it == taken.end() || it->second != ts))
        throw std::logic_error("M2LFftGpu: parities " + std::to_string(ct) + " and " + std::to_string(other) +
                               " take different offsets for one parity difference (level_stencil.h's rule)");
    }
  }
  std::map<long long, std::vector<cplx>> K;
  cplx I[kMaxCoef];
  for (int ct = 0; ct < 8; ++ct) {
    for (const auto& t : st.offsets[ct]) {
      int T[3];
      const int cs = source_of(ct, t, T), dd = delta_index(cs, ct);
      if (ct != representative(dd)) continue;
      std::vector<cplx>& k = K[key_of(dd, T)];
      if (k.empty()) k.assign(nf, cplx(0));
      solid_harmonics({t[0] * h, t[1] * h, t[2] * h}, p, nullptr, I);
      for (int nn = 0; nn <= p; ++nn)
        for (int mo = -nn; mo <= nn; ++mo) {
          double re, im;
          coef(reinterpret_cast<const double*>(I), nn, mo, re, im);
          k[fidx(nn, mo)] += cplx(re, im);
        }
    }
  }
  // The entries in the order of the differences (K's keys are d V + T): those of the
  // differences [d0, d0 + k) are one run of them, first[d0] .. first[d0 + k].
  std::vector<long long> idx;
  std::vector<double2> val;
  std::vector<long long> first(28, 0);
  for (const auto& [key, k] : K) {
    const long long dd = key / d.V, T = key % d.V;
    for (int f = 0; f < nf; ++f) {
      idx.push_back((dd * nf + f) * d.V + T);
      val.push_back(make_double2(k[f].real(), k[f].imag()));
    }
    first[dd + 1] = static_cast<long long>(idx.size());
  }
  for (int dd = 1; dd <= 27; ++dd) first[dd] = std::max(first[dd], first[dd - 1]);
  {
    // kFftTableChunk differences at a time, each transformed in place and put into Kh, so that
    // the tables in real space and cuFFT's work area are a ninth of the tables, not as large.
    constexpr int k = kFftTableChunk;
    static_assert(27 % k == 0, "the chunks cover the 27 differences");
    d.Kh.resize(27ULL * nf * d.V);
    DeviceArray<double2> D(static_cast<std::size_t>(k) * nf * d.V);
    const DeviceArray<long long> didx(idx);
    const DeviceArray<double2> dval(val);
    Plan tp;
    make_plan(tp, d.m, d.e, static_cast<long long>(k) * nf);
    for (int d0 = 0; d0 < 27; d0 += k) {
      D.zero();
      const long long b = first[d0], e = first[d0 + k];
      if (e > b) {
        place_kernel<<<blocks_for(e - b, 256), 256>>>(b, e, d0 * static_cast<long long>(nf) * d.V, didx.data(),
                                                      dval.data(), D.data());
        VH_CHECK_LAUNCH();
      }
      VH_CHECK_CUFFT(cufftExecZ2Z(tp.h, reinterpret_cast<cufftDoubleComplex*>(D.data()),
                                  reinterpret_cast<cufftDoubleComplex*>(D.data()), CUFFT_INVERSE));
      transpose_kernel<<<blocks_for(static_cast<long long>(k) * nf * d.V, 256), 256>>>(nf, d.V, d0, k, D.data(),
                                                                                      d.Kh.data());
      VH_CHECK_LAUNCH();
    }
    VH_CHECK_CUDA(cudaDeviceSynchronize());
  }
  d.Mh.resize(24ULL * nf * d.V);
  d.Lh.resize(24ULL * d.nc * d.V);
  make_plan(d.fwd, d.m, d.e, 24LL * nf);
  make_plan(d.inv, d.m, d.e, 24LL * d.nc);
  VH_CHECK_CUDA(cudaEventCreate(&d.e0));
  VH_CHECK_CUDA(cudaEventCreate(&d.e1));
}

M2LFftGpu::~M2LFftGpu() = default;

int M2LFftGpu::planes() const {
  const Impl& d = *impl_;
  return d.e == d.m ? d.m : d.e - (d.reach.hi - d.reach.lo);
}

void M2LFftGpu::apply_device(const void* M, void* L, const int* grid, CUstream_st* stream, int z0, int nz) {
  Impl& d = *impl_;
  if (nz == 0) nz = planes();
  if (z0 < 0 || z0 >= d.m || nz < 1 || nz > planes())
    throw std::invalid_argument("M2LFftGpu: target parent planes " + std::to_string(z0) + " + " + std::to_string(nz) +
                                "; allowed: a first plane in 0.." + std::to_string(d.m - 1) + " and 1.." +
                                std::to_string(planes()) + " planes");
  // The transforms' plane 0: the level's plane 0 for the whole level, else the window's lowest
  // source plane.
  const int zbase = d.e == d.m ? 0 : ((z0 + d.reach.lo) % d.m + d.m) % d.m;
  cudaStream_t s = stream;
  fold_kernel<<<blocks_for(24LL * d.nf * d.V, 256), 256, 0, s>>>(d.p, d.V, d.m, zbase, static_cast<const double2*>(M),
                                                                  grid, d.Mh.data());
  VH_CHECK_LAUNCH();
  auto* mh = reinterpret_cast<cufftDoubleComplex*>(d.Mh.data());
  VH_CHECK_CUFFT(cufftSetStream(d.fwd.h, s));
  VH_CHECK_CUFFT(cufftExecZ2Z(d.fwd.h, mh, mh, CUFFT_FORWARD));
  const int threads = m2l_fft_contract_threads(d.p);
  const std::size_t shmem = sizeof(double2) * 11 * d.nf;
  if (threads > 768)
    contract_kernel_wide<<<static_cast<unsigned>(d.V), threads, shmem, s>>>(d.p, d.V, d.Mh.data(), d.Kh.data(),
                                                                         d.Lh.data());
  else
    contract_kernel<<<static_cast<unsigned>(d.V), threads, shmem, s>>>(d.p, d.V, d.Mh.data(), d.Kh.data(),
                                                                    d.Lh.data());
  VH_CHECK_LAUNCH();
  auto* lh = reinterpret_cast<cufftDoubleComplex*>(d.Lh.data());
  VH_CHECK_CUFFT(cufftSetStream(d.inv.h, s));
  VH_CHECK_CUFFT(cufftExecZ2Z(d.inv.h, lh, lh, CUFFT_INVERSE));
  scatter_kernel<<<blocks_for(24LL * d.nc * d.m * d.m * nz, 256), 256, 0, s>>>(
      d.p, d.V, d.m, zbase, z0, nz, d.Lh.data(), grid, static_cast<double2*>(L));
  VH_CHECK_LAUNCH();
}

void M2LFftGpu::apply(const std::vector<cplx>& M, std::vector<cplx>& L, const std::vector<int>& grid, int z0,
                      int nz) {
  static_assert(sizeof(cplx) == sizeof(double2), "std::complex<double> is a double pair");
  DeviceArray<double2> dM(M.size()), dL(L.size());
  dM.upload(reinterpret_cast<const double2*>(M.data()), M.size());
  dL.upload(reinterpret_cast<const double2*>(L.data()), L.size());
  DeviceArray<int> dg(grid);
  Impl& d = *impl_;
  VH_CHECK_CUDA(cudaEventRecord(d.e0, 0));
  apply_device(dM.data(), dL.data(), dg.data(), nullptr, z0, nz);
  VH_CHECK_CUDA(cudaEventRecord(d.e1, 0));
  VH_CHECK_CUDA(cudaEventSynchronize(d.e1));
  VH_CHECK_CUDA(cudaEventElapsedTime(&d.ms, d.e0, d.e1));
  dL.download(reinterpret_cast<double2*>(L.data()), L.size());
}

double M2LFftGpu::last_ms() const { return impl_->ms; }

std::size_t M2LFftGpu::bytes() const { return impl_->Kh.bytes() + impl_->Mh.bytes() + impl_->Lh.bytes(); }

}  // namespace vh::fmm

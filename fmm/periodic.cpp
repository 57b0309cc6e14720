#include "fmm/periodic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

namespace vh::fmm {

int near_image_range(double theta) {
  // sqrt(3) < theta (R0 + 1), R0 >= 1
  int r0 = 1;
  while (!(std::sqrt(3.0) < theta * (r0 + 1))) ++r0;
  return r0;
}

std::vector<Vec3> near_image_shifts(int r0) {
  std::vector<Vec3> s{{0, 0, 0}};
  for (int i = -r0; i <= r0; ++i)
    for (int j = -r0; j <= r0; ++j)
      for (int k = -r0; k <= r0; ++k)
        if (i || j || k) s.push_back({i * kBoxLength, j * kBoxLength, k * kBoxLength});
  return s;
}

long long lattice_half_width(int r0, int images) {
  long long w = 2 * r0 + 1;
  for (int k = 0; k < images; ++k) w *= 3;
  return (w - 1) / 2;
}

double lattice_worst_ratio(int r0, int images, double theta) {
  const int w = 2 * r0 + 1, inner = (w - 1) / 2, outer = (3 * w - 1) / 2;
  double worst = 0, block = 1;  // block side in boxes
  for (int k = 0; k < images; ++k, block *= 3) {
    const double rt = std::sqrt(3.0) / 2, rs = std::sqrt(3.0) / 2 * block;
    for (int i = -outer; i <= outer; ++i)
      for (int j = -outer; j <= outer; ++j)
        for (int l = -outer; l <= outer; ++l) {
          if (std::max({std::abs(i), std::abs(j), std::abs(l)}) <= inner) continue;
          const double d = block * std::sqrt(double(i * i + j * j + l * l));
          worst = std::max(worst, (rt + rs) / (theta * d));
        }
  }
  return worst;
}

// The lattice tables (periodic.h) depend on (p, r0, images) only and cost (3W)^3 solid
// harmonics per level (~20 000 at theta = 0.4, 0.05 s a call at p = 10), so they are computed
// once per key and kept (a handful of keys per run; guarded by a mutex, the entries never
// change once stored).
const LatticeTables& lattice_tables(int p, int r0, int images) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int>, LatticeTables> cache;
  const auto key = std::make_tuple(p, r0, images);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const int nc = ncoef(p);
  const int w = 2 * r0 + 1, inner = (w - 1) / 2, outer = (3 * w - 1) / 2;
  LatticeTables tables;
  tables.T.assign(images, std::vector<cplx>(nc, cplx(0.0)));
  tables.S.assign(images, std::vector<cplx>(nc, cplx(0.0)));
  std::vector<cplx> R(nc), I(nc);
  double block = kBoxLength;  // block side
  for (int k = 0; k < images; ++k, block *= 3) {
    std::vector<cplx>& T = tables.T[k];
    std::vector<cplx>& S = tables.S[k];
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j)
        for (int l = -1; l <= 1; ++l) {
          solid_harmonics({i * block, j * block, l * block}, p, R.data(), nullptr);
          for (int c = 0; c < nc; ++c) S[c] += R[c];
        }
    for (int i = -outer; i <= outer; ++i)
      for (int j = -outer; j <= outer; ++j)
        for (int l = -outer; l <= outer; ++l) {
          if (std::max({std::abs(i), std::abs(j), std::abs(l)}) <= inner) continue;
          solid_harmonics({i * block, j * block, l * block}, p, R.data(), I.data());
          for (int c = 0; c < nc; ++c) T[c] += I[c];
        }
  }
  std::lock_guard<std::mutex> lock(mutex);
  // std::map never moves its elements: the reference stays valid.  A concurrent first call
  // with the same key computed the same tables; the first stored wins.
  return cache.emplace(key, std::move(tables)).first->second;
}

void lattice_m2l(int p, int r0, int images, const cplx* Mroot, cplx* Lroot) {
  const int nc = ncoef(p);
  const auto& tables = lattice_tables(p, r0, images);
  Expansion M(Mroot, Mroot + 3 * nc), Mnext(3 * nc);
  for (int k = 0; k < images; ++k) {
    // One M2L with the level's summed table.
    m2l_table(p, tables.T[k].data(), M.data(), Lroot);
    // M_{k+1}: 27 copies of the block at offsets (-1, 0, 1) * block, one M2M (M2M is linear in
    // the table R_lm(d)).
    std::fill(Mnext.begin(), Mnext.end(), cplx(0.0));
    m2m_table(p, tables.S[k].data(), M.data(), Mnext.data());
    M.swap(Mnext);
  }
}

void wrap_into_box(std::vector<Vec3>& x) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(x.size()); ++i) {
    for (int d = 0; d < 3; ++d) x[i][d] = wrap_coordinate(x[i][d]);
  }
}

MeanTerms mean_terms(const std::vector<Vec3>& xs, const std::vector<Vec3>& alpha, bool wrap) {
  constexpr std::ptrdiff_t kChunk = 4096;
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(xs.size()), nchunk = (n + kChunk - 1) / kChunk;
  const double c = 0.5 * kBoxLength;
  std::vector<MeanTerms> part(nchunk);
#pragma omp parallel for schedule(static) if (nchunk > 4)
  for (std::ptrdiff_t k = 0; k < nchunk; ++k) {
    MeanTerms& t = part[k];
    for (std::ptrdiff_t q = k * kChunk; q < std::min(n, (k + 1) * kChunk); ++q) {
      double r[3], v[6];
      for (int d = 0; d < 3; ++d) r[d] = (wrap ? wrap_coordinate(xs[q][d]) : xs[q][d]) - c;
      mean_source_terms(r, alpha[q].data(), v);
      for (int d = 0; d < 3; ++d) {
        t.Q[d] += v[d];
        t.D[d] += v[3 + d];
      }
    }
  }
  MeanTerms m;
  for (const MeanTerms& t : part)
    for (int d = 0; d < 3; ++d) {
      m.Q[d] += t.Q[d];
      m.D[d] += t.D[d];
    }
  return m;
}

void periodic_correction(const MeanTerms& m, const std::vector<Vec3>& xt, std::vector<Vec3>& u,
                         std::vector<Mat3>& grad) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(xt.size()); ++i)
    mean_correction(m, xt[i].data(), u[i].data(), grad[i][0].data());
}

}  // namespace vh::fmm

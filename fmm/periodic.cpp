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

namespace {

// Summed tables of the far lattice, per level k (block side b = 3^k L): the irregular
// T_k = sum over the level's shell of I_lm(n b), and the regular S_k = sum over the 27 offsets
// (-1, 0, 1)^3 b of R_lm, the M2M of a block to its 3x3x3 super-block.  They depend on
// (p, r0, images) only and cost (3W)^3 solid harmonics per level (~20 000 at theta = 0.4,
// 0.05 s a call at p = 10), so they are computed once per key and kept (a handful of keys per
// run; guarded by a mutex, the entries never change once stored).
struct LatticeTables {
  std::vector<std::vector<cplx>> T, S;
};

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

}  // namespace

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
    Vec3& p = x[i];
    for (int d = 0; d < 3; ++d) {
      double v = p[d] - kBoxLength * std::floor(p[d] / kBoxLength);
      if (v >= kBoxLength || v < 0) v = 0;  // rounding of values just below a multiple of L
      p[d] = v;
    }
  }
}

void periodic_correction(const std::vector<Vec3>& xs, const std::vector<Vec3>& alpha, const std::vector<Vec3>& xt,
                         std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  const double c = 0.5 * kBoxLength, V3 = 3 * kBoxLength * kBoxLength * kBoxLength;
  Vec3 Q{}, D{};
  for (std::size_t q = 0; q < xs.size(); ++q) {
    const Vec3 r = {xs[q][0] - c, xs[q][1] - c, xs[q][2] - c};
    const Vec3& a = alpha[q];
    Q[0] += a[0];
    Q[1] += a[1];
    Q[2] += a[2];
    D[0] += r[1] * a[2] - r[2] * a[1];
    D[1] += r[2] * a[0] - r[0] * a[2];
    D[2] += r[0] * a[1] - r[1] * a[0];
  }
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(xt.size()); ++i) {
    const Vec3 r = {xt[i][0] - c, xt[i][1] - c, xt[i][2] - c};
    u[i][0] += (r[1] * Q[2] - r[2] * Q[1] - D[0]) / V3;
    u[i][1] += (r[2] * Q[0] - r[0] * Q[2] - D[1]) / V3;
    u[i][2] += (r[0] * Q[1] - r[1] * Q[0] - D[2]) / V3;
    // eps_{mlk} Q_k
    grad[i][0][1] += Q[2] / V3;
    grad[i][0][2] -= Q[1] / V3;
    grad[i][1][0] -= Q[2] / V3;
    grad[i][1][2] += Q[0] / V3;
    grad[i][2][0] += Q[1] / V3;
    grad[i][2][1] -= Q[0] / V3;
  }
}

}  // namespace vh::fmm

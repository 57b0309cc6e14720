#include "fmm/expansions.h"

#include <cmath>

namespace vh::fmm {

namespace {

// X_{l,m} for any -l <= m <= l from the m >= 0 storage: X_{l,-m} = (-1)^m conj(X_{lm}).
inline cplx get(const cplx* X, int l, int m) {
  if (m >= 0) return X[idx(l, m)];
  const cplx v = std::conj(X[idx(l, -m)]);
  return (m & 1) ? -v : v;
}

}  // namespace

void solid_harmonics(const Vec3& r, int p, cplx* R, cplx* I) {
  const double x = r[0], y = r[1], z = r[2];
  const double r2 = x * x + y * y + z * z;
  const cplx xy(x, y);
  if (R) {
    R[0] = 1.0;
    for (int l = 0; l < p; ++l) {
      R[idx(l + 1, l + 1)] = -xy / double(2 * l + 2) * R[idx(l, l)];
      for (int m = 0; m <= l; ++m) {
        const cplx prev = (m <= l - 1) ? R[idx(l - 1, m)] : cplx(0.0);
        R[idx(l + 1, m)] = (double(2 * l + 1) * z * R[idx(l, m)] - r2 * prev) / double((l + m + 1) * (l - m + 1));
      }
    }
  }
  if (!I) return;
  const double inv_r2 = 1.0 / r2;
  I[0] = std::sqrt(inv_r2);
  for (int l = 0; l < p; ++l) {
    I[idx(l + 1, l + 1)] = -double(2 * l + 1) * xy * inv_r2 * I[idx(l, l)];
    for (int m = 0; m <= l; ++m) {
      const cplx prev = (m <= l - 1) ? I[idx(l - 1, m)] : cplx(0.0);
      I[idx(l + 1, m)] = (double(2 * l + 1) * z * I[idx(l, m)] - double(l * l - m * m) * prev) * inv_r2;
    }
  }
}

void p2m(int p, const Vec3& d, const Vec3& q, cplx* Mc) {
  const int nc = ncoef(p);
  cplx R[kMaxCoef];
  solid_harmonics(d, p, R, nullptr);
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < nc; ++c) Mc[a * nc + c] += q[a] * R[c];
}

void m2m(int p, const Vec3& d, const cplx* Mc, cplx* Mp) {
  cplx R[kMaxCoef];
  solid_harmonics(d, p, R, nullptr);
  m2m_table(p, R, Mc, Mp);
}

void m2m_table(int p, const cplx* R, const cplx* Mc, cplx* Mp) {
  const int nc = ncoef(p);
  for (int a = 0; a < 3; ++a) {
    const cplx* M = Mc + a * nc;
    cplx* P = Mp + a * nc;
    for (int l = 0; l <= p; ++l)
      for (int m = 0; m <= l; ++m) {
        cplx s = 0.0;
        for (int j = 0; j <= l; ++j)
          for (int k = -j; k <= j; ++k) {
            const int n = l - j, mm = m - k;
            if (mm > n || mm < -n) continue;
            s += get(R, j, k) * get(M, n, mm);
          }
        P[idx(l, m)] += s;
      }
  }
}

void m2l_table(int p, const cplx* Ih, const cplx* Mc, cplx* Lc) {
  const int nc = ncoef(p);
  // Full (l, -l..l) real/imaginary arrays, index l*l + l + m, so that the inner sums over k are
  // contiguous dot products; the (-1)^j conj(Mc_jk) factor is folded into Mr, Mi.
  double Ir[(kMaxOrder + 1) * (kMaxOrder + 1)], Ii[(kMaxOrder + 1) * (kMaxOrder + 1)];
  double Mr[3][(kMaxOrder + 1) * (kMaxOrder + 1)], Mi[3][(kMaxOrder + 1) * (kMaxOrder + 1)];
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m) {
      const cplx v = get(Ih, n, m);
      Ir[n * n + n + m] = v.real();
      Ii[n * n + n + m] = v.imag();
      for (int a = 0; a < 3; ++a) {
        const cplx w = std::conj(get(Mc + a * nc, n, m)) * double((n & 1) ? -1 : 1);
        Mr[a][n * n + n + m] = w.real();
        Mi[a][n * n + n + m] = w.imag();
      }
    }
  for (int l = 0; l <= p; ++l)
    for (int m = 0; m <= l; ++m) {
      double sr[3] = {0, 0, 0}, si[3] = {0, 0, 0};
      for (int j = 0; j <= p - l; ++j) {
        const int bi = (l + j) * (l + j) + (l + j) + m, bm = j * j + j;
        for (int k = -j; k <= j; ++k) {
          const double ir = Ir[bi + k], ii = Ii[bi + k];
          for (int a = 0; a < 3; ++a) {
            sr[a] += Mr[a][bm + k] * ir - Mi[a][bm + k] * ii;
            si[a] += Mr[a][bm + k] * ii + Mi[a][bm + k] * ir;
          }
        }
      }
      for (int a = 0; a < 3; ++a) Lc[a * nc + idx(l, m)] += cplx(sr[a], si[a]);
    }
}

void m2l(int p, const Vec3& d, const cplx* Mc, cplx* Lc) {
  cplx I[kMaxCoef];
  solid_harmonics(d, p, nullptr, I);
  m2l_table(p, I, Mc, Lc);
}

namespace {

// L2L restricted to output degrees 0..jmax (jmax = p for a full shift):
// Lout_jk = sum_n sum_q Lc_{n+j, k+q} conj(R_{n,q}), contiguous in q.
void l2l_upto(int p, int jmax, const cplx* R, const cplx* Lc, cplx* Lout, int nc_out) {
  const int nc = ncoef(p);
  constexpr int nf = (kMaxOrder + 1) * (kMaxOrder + 1);
  double Rr[nf], Ri[nf], Lr[3][nf], Li[3][nf];
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m) {
      const cplx v = get(R, n, m);
      Rr[n * n + n + m] = v.real();
      Ri[n * n + n + m] = -v.imag();  // conj
      for (int a = 0; a < 3; ++a) {
        const cplx w = get(Lc + a * nc, n, m);
        Lr[a][n * n + n + m] = w.real();
        Li[a][n * n + n + m] = w.imag();
      }
    }
  for (int j = 0; j <= jmax; ++j)
    for (int k = 0; k <= j; ++k) {
      double sr[3] = {0, 0, 0}, si[3] = {0, 0, 0};
      for (int n = 0; n <= p - j; ++n) {
        const int bl = (n + j) * (n + j) + (n + j) + k, br = n * n + n;
        for (int q = -n; q <= n; ++q) {
          const double rr = Rr[br + q], ri = Ri[br + q];
          for (int a = 0; a < 3; ++a) {
            sr[a] += Lr[a][bl + q] * rr - Li[a][bl + q] * ri;
            si[a] += Lr[a][bl + q] * ri + Li[a][bl + q] * rr;
          }
        }
      }
      for (int a = 0; a < 3; ++a) Lout[a * nc_out + idx(j, k)] += cplx(sr[a], si[a]);
    }
}

}  // namespace

void l2l(int p, const Vec3& d, const cplx* Lc, cplx* Lchild) {
  cplx R[kMaxCoef];
  solid_harmonics(d, p, R, nullptr);
  l2l_upto(p, p, R, Lc, Lchild, ncoef(p));
}

void l2p(int p, const Vec3& d, const cplx* Lc, double dphi[3][3], double hphi[3][3][3]) {
  cplx R[kMaxCoef];
  solid_harmonics(d, p, R, nullptr);
  cplx Lt[3 * 6] = {};  // degrees 0..2 at the target
  l2l_upto(p, p < 2 ? p : 2, R, Lc, Lt, 6);
  // Q_j(e) = sum_k Lt_jk conj(R_jk(e)) = Re(Lt_j0 R_j0(e)) + 2 Re sum_{k>0} Lt_jk conj(R_jk(e)).
  auto Q = [&](int a, int j, const Vec3& e) {
    cplx Re[6];
    solid_harmonics(e, 2, Re, nullptr);
    double s = (Lt[a * 6 + idx(j, 0)] * std::conj(Re[idx(j, 0)])).real();
    for (int k = 1; k <= j; ++k) s += 2.0 * (Lt[a * 6 + idx(j, k)] * std::conj(Re[idx(j, k)])).real();
    return s;
  };
  const Vec3 e[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int a = 0; a < 3; ++a) {
    for (int i = 0; i < 3; ++i) dphi[a][i] = Q(a, 1, e[i]);
    for (int i = 0; i < 3; ++i) {
      hphi[a][i][i] = 2.0 * Q(a, 2, e[i]);
      for (int k = i + 1; k < 3; ++k) {
        const Vec3 s = {e[i][0] + e[k][0], e[i][1] + e[k][1], e[i][2] + e[k][2]};
        hphi[a][i][k] = hphi[a][k][i] = Q(a, 2, s) - Q(a, 2, e[i]) - Q(a, 2, e[k]);
      }
    }
  }
}

}  // namespace vh::fmm

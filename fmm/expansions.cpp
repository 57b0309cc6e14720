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
  // The recurrences of fmm/expansions_kernel.h on (re, im) pairs (cplx is layout-compatible).
  const double x = r[0], y = r[1], z = r[2];
  const double r2 = x * x + y * y + z * z;
  if (R) {
    double* Rd = reinterpret_cast<double*>(R);
    R[0] = 1.0;
    for (int l = 0; l < p; ++l) {
      const int d = 2 * idx(l + 1, l + 1);
      Rd[d] = Rd[2 * idx(l, l)];
      Rd[d + 1] = Rd[2 * idx(l, l) + 1];
      regular_diagonal(l, x, y, Rd[d], Rd[d + 1]);
      for (int m = 0; m <= l; ++m) {
        const int c = 2 * idx(l, m), q = (m <= l - 1) ? 2 * idx(l - 1, m) : -1;
        regular_up(l, m, z, r2, Rd[c], Rd[c + 1], q >= 0 ? Rd[q] : 0.0, q >= 0 ? Rd[q + 1] : 0.0,
                   Rd[2 * idx(l + 1, m)], Rd[2 * idx(l + 1, m) + 1]);
      }
    }
  }
  if (!I) return;
  double* Id = reinterpret_cast<double*>(I);
  const double inv_r2 = 1.0 / r2;
  I[0] = std::sqrt(inv_r2);
  for (int l = 0; l < p; ++l) {
    const int d = 2 * idx(l + 1, l + 1);
    Id[d] = Id[2 * idx(l, l)];
    Id[d + 1] = Id[2 * idx(l, l) + 1];
    irregular_diagonal(l, x, y, inv_r2, Id[d], Id[d + 1]);
    for (int m = 0; m <= l; ++m) {
      const int c = 2 * idx(l, m), q = (m <= l - 1) ? 2 * idx(l - 1, m) : -1;
      irregular_up(l, m, z, inv_r2, Id[c], Id[c + 1], q >= 0 ? Id[q] : 0.0, q >= 0 ? Id[q + 1] : 0.0,
                   Id[2 * idx(l + 1, m)], Id[2 * idx(l + 1, m) + 1]);
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
    const double* M = reinterpret_cast<const double*>(Mc + a * nc);
    cplx* P = Mp + a * nc;
    for (int l = 0; l <= p; ++l)
      for (int m = 0; m <= l; ++m) {
        double sr, si;
        m2m_table_sum(reinterpret_cast<const double*>(R), M, l, m, sr, si);
        P[idx(l, m)] += cplx(sr, si);
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
      double sr[3], si[3];
      m2l_table_sum(p, l, m, Ir, Ii, Mr[0], Mi[0], (kMaxOrder + 1) * (kMaxOrder + 1), sr, si);
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
  potential_derivatives(reinterpret_cast<const double*>(Lt), dphi, hphi);
}

}  // namespace vh::fmm

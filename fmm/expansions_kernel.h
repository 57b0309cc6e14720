// Per-coefficient math of the solid-harmonic expansions (fmm/expansions.h), one inline
// definition for the CPU (expansions.cpp, periodic.cpp) and the GPU far field (upward_gpu.cu,
// m2l_gpu.cu, downward_gpu.cu, periodic_gpu.cu): VH_HD.  A complex number is a (re, im) pair of
// doubles, the layout of std::complex<double> and double2 alike.
//
//   storage:  m >= 0 only, coefficient (l, m) at cidx(l, m) = l (l + 1) / 2 + m (ncoef(p) of
//             them); the full layout has -l <= m <= l at fidx(l, m) = l^2 + l + m.
//   symmetry: X_{l,-m} = (-1)^m conj(X_lm) for R, I and every expansion (negm).
//   recurrences (Helgaker, Joergensen & Olsen 9.13.78-82), r^2 = x^2 + y^2 + z^2:
//     R_00 = 1,        R_{l+1,l+1} = -(x + i y) / (2l + 2) R_ll,
//                      R_{l+1,m}   = ((2l + 1) z R_lm - r^2 R_{l-1,m}) / ((l + m + 1)(l - m + 1));
//     I_00 = 1 / r,    I_{l+1,l+1} = -(2l + 1) (x + i y) / r^2 I_ll,
//                      I_{l+1,m}   = ((2l + 1) z I_lm - (l^2 - m^2) I_{l-1,m}) / r^2.
//   translations (expansions.h): M2M m2m_terms, M2L m2l_table_sum on m2l_operands (the source
//        factor m2l_fold), L2L l2l_terms.
//   L2P: the local expansion shifted to the target, degrees <= 2, gives the gradient and Hessian
//        of the three potentials phi_a (potential_derivatives) and u = curl psi,
//        du_m/dx_l = eps_{mjk} d_l d_j psi_k with psi = phi / (4 pi) (velocity_from_potentials).
// Each function rounds operation by operation as written (host: ISO C++, no contraction); the
// GPU kernels may contract multiply-adds and take R's divisions as multiplications by
// reciprocals (Reciprocal), periodic_gpu.cu (-fmad=false) may not contract.
#pragma once

#include <math.h>

#include "base/hd.h"

namespace vh::fmm {

VH_HD inline int cidx(int l, int m) { return l * (l + 1) / 2 + m; }
VH_HD inline int fidx(int l, int m) { return l * l + l + m; }

/// (l, m) of the stored coefficient c = cidx(l, m).
VH_HD inline void lm_of(int c, int& l, int& m) {
  l = 0;
  while ((l + 1) * (l + 2) / 2 <= c) ++l;
  m = c - l * (l + 1) / 2;
}

/// Degree l of the full-layout index f = fidx(l, m).
VH_HD inline int degree_of(int f) {
  int l = 0;
  while ((l + 1) * (l + 1) <= f) ++l;
  return l;
}

/// The conjugate symmetry X_{l,-m} = (-1)^m conj(X_lm) (m > 0): (re, im) of X_lm become those
/// of X_{l,-m}.  Every expansion, table and staging of either back end reads m < 0 through it.
template <class T>
VH_HD inline void negm(int m, T& re, T& im) {
  if (m & 1) re = -re;
  else im = -im;
}

/// The M2L's source factor (expansions.h): (re, im) of M_nm become those of (-1)^n conj(M_nm).
template <class T>
VH_HD inline void m2l_fold(int n, T& re, T& im) {
  im = -im;
  if (n & 1) {
    re = -re;
    im = -im;
  }
}

/// (re, im) <- a (re, im) for the complex a = (ar, ai).
VH_HD inline void cmul_into(double ar, double ai, double& re, double& im) {
  const double r = ar * re - ai * im, i = ar * im + ai * re;
  re = r;
  im = i;
}

/// The regular recurrences' divisions by small positive integers d (2l + 2 and
/// (l + m + 1)(l - m + 1)). Divide divides: the host's rounding, as it always was. Reciprocal
/// multiplies by 1/d from a table of correctly rounded reciprocals: one rounding more (within an
/// ulp of the quotient), no division sequence; the GPU kernels take it (in the P2M's column
/// recurrence the two division sequences a step were most of its FP64 instructions).
struct Divide {
  VH_HD double operator()(double a, int d) const { return a / double(d); }
};
struct Reciprocal {
  const double* inv;  ///< inv[d] = 1 / d, d up to (p + 1)^2
  VH_HD double operator()(double a, int d) const { return a * inv[d]; }
};
/// The table Reciprocal reads: 1 / d for d = 1 .. N - 1 (entry 0 unused), each correctly rounded
/// (constant-evaluated division).
template <int N>
struct ReciprocalTable {
  double v[N];
  constexpr ReciprocalTable() : v() {
    for (int d = 1; d < N; ++d) v[d] = 1.0 / double(d);
  }
};

/// R_{l+1,l+1} from R_ll, in place: -(x + i y) / (2l + 2) R_ll.
template <class Div = Divide>
VH_HD inline void regular_diagonal(int l, double x, double y, double& re, double& im, const Div& div = Div()) {
  cmul_into(div(-x, 2 * l + 2), div(-y, 2 * l + 2), re, im);
}

/// R_{l+1,m} from R_lm = (cr, ci) and R_{l-1,m} = (pr, pi) (zero for m = l).
template <class Div = Divide>
VH_HD inline void regular_up(int l, int m, double z, double r2, double cr, double ci, double pr, double pi, double& nr,
                             double& ni, const Div& div = Div()) {
  const double s = double(2 * l + 1) * z;
  const int den = (l + m + 1) * (l - m + 1);
  nr = div(s * cr - r2 * pr, den);
  ni = div(s * ci - r2 * pi, den);
}

/// I_{l+1,l+1} from I_ll, in place: -(2l + 1) (x + i y) / r^2 I_ll.
VH_HD inline void irregular_diagonal(int l, double x, double y, double inv_r2, double& re, double& im) {
  const double s = -double(2 * l + 1);
  cmul_into(s * x * inv_r2, s * y * inv_r2, re, im);
}

/// I_{l+1,m} from I_lm = (cr, ci) and I_{l-1,m} = (pr, pi) (zero for m = l).
VH_HD inline void irregular_up(int l, int m, double z, double inv_r2, double cr, double ci, double pr, double pi,
                               double& nr, double& ni) {
  const double s = double(2 * l + 1) * z, c = double(l * l - m * m);
  nr = (s * cr - c * pr) * inv_r2;
  ni = (s * ci - c * pi) * inv_r2;
}

/// Row l + 1 (m = 0 .. l + 1) of the regular harmonics R, or of the irregular I when Irr, from
/// rows l and l - 1 by the recurrences above: rows in m >= 0 storage, (re, im) at [2 m]; Xm1
/// is not read for l = 0.  q is r^2 for R, 1 / r^2 for I.  div: R's divisions (Divide above).
template <bool Irr, class Div = Divide>
VH_HD inline void harmonic_row_up(int l, double x, double y, double z, double q, const double* X, const double* Xm1,
                                  double* Xp1, const Div& div = Div()) {
  double dr = X[2 * l], di = X[2 * l + 1];
  if (Irr) {
    irregular_diagonal(l, x, y, q, dr, di);
  } else {
    regular_diagonal(l, x, y, dr, di, div);
  }
  Xp1[2 * (l + 1)] = dr;
  Xp1[2 * (l + 1) + 1] = di;
  for (int m = 0; m <= l; ++m) {
    const double pr = m <= l - 1 ? Xm1[2 * m] : 0.0, pi = m <= l - 1 ? Xm1[2 * m + 1] : 0.0;
    if (Irr) {
      irregular_up(l, m, z, q, X[2 * m], X[2 * m + 1], pr, pi, Xp1[2 * m], Xp1[2 * m + 1]);
    } else {
      regular_up(l, m, z, q, X[2 * m], X[2 * m + 1], pr, pi, Xp1[2 * m], Xp1[2 * m + 1], div);
    }
  }
}

/// The M2L's folded source coefficient (-1)^n conj(M_nm) at full index f = fidx(n, m): the
/// stored coefficient cidx(n, |m|) it comes from and the signs of its real and imaginary parts
/// (negm, then m2l_fold), packed as bits 0..19 the index, 20..25 the degree n, bit 30 negates
/// Re, bit 31 negates Im.
VH_HD inline unsigned fold_map(int f) {
  const int n = degree_of(f), m = f - n * n - n;
  double sre = 1, sim = 1;
  if (m < 0) negm(-m, sre, sim);
  m2l_fold(n, sre, sim);
  return static_cast<unsigned>(cidx(n, m < 0 ? -m : m)) | static_cast<unsigned>(n) << 20 |
         (sre < 0 ? 1u << 30 : 0u) | (sim < 0 ? 1u << 31 : 0u);
}

/// Gradient dphi[a][j] = d phi_a / d x_j and Hessian h[a][j][k] of the three potentials from
/// their local expansion at the target, degrees 0..2: Lt[2 (6 a + cidx(j, k))] (+1: Im).  From
/// phi = sum L_jk conj(R_jk(r)) with R_1 and R_2 written out (L22 = c + i d):
///   grad phi = (-Re L11, -Im L11, Re L10),
///   phi_xx = (c - L20)/2, phi_yy = -(c + L20)/2, phi_zz = L20, phi_xy = d/2,
///   phi_xz = -Re L21, phi_yz = -Im L21.
VH_HD inline void potential_derivatives(const double* Lt, double dphi[3][3], double h[3][3][3]) {
  for (int a = 0; a < 3; ++a) {
    const double* La = Lt + 12 * a;
    const double L10 = La[2 * cidx(1, 0)], L11r = La[2 * cidx(1, 1)], L11i = La[2 * cidx(1, 1) + 1];
    const double L20 = La[2 * cidx(2, 0)], L21r = La[2 * cidx(2, 1)], L21i = La[2 * cidx(2, 1) + 1];
    const double L22r = La[2 * cidx(2, 2)], L22i = La[2 * cidx(2, 2) + 1];
    dphi[a][0] = -L11r;
    dphi[a][1] = -L11i;
    dphi[a][2] = L10;
    h[a][0][0] = 0.5 * (L22r - L20);
    h[a][1][1] = -0.5 * (L22r + L20);
    h[a][2][2] = L20;
    h[a][0][1] = h[a][1][0] = 0.5 * L22i;
    h[a][0][2] = h[a][2][0] = -L21r;
    h[a][1][2] = h[a][2][1] = -L21i;
  }
}

/// u and grad u (r[0..2] = u, r[3 + 3 m + k] = du_m/dx_k) from the derivatives of the three
/// potentials: u = curl psi, du_m/dx_k = eps_{mjl} d_k d_j psi_l, psi = phi / (4 pi).
VH_HD inline void velocity_from_potentials(const double dphi[3][3], const double h[3][3][3], double r[12]) {
  const double inv4pi = 0.25 / 3.14159265358979323846;
  r[0] = inv4pi * (dphi[2][1] - dphi[1][2]);
  r[1] = inv4pi * (dphi[0][2] - dphi[2][0]);
  r[2] = inv4pi * (dphi[1][0] - dphi[0][1]);
  for (int k = 0; k < 3; ++k) {
    r[3 + k] = inv4pi * (h[2][1][k] - h[1][2][k]);
    r[6 + k] = inv4pi * (h[0][2][k] - h[2][0][k]);
    r[9 + k] = inv4pi * (h[1][0][k] - h[0][1][k]);
  }
}

/// X_{l,m} for any -l <= m <= l from the m >= 0 storage X (pairs), by negm.
VH_HD inline void coef(const double* X, int l, int m, double& re, double& im) {
  const int c = cidx(l, m < 0 ? -m : m);
  re = X[2 * c];
  im = X[2 * c + 1];
  if (m < 0) negm(-m, re, im);
}

/// The M2M (expansions.h), one output (l, m) of one component: adds to (sr, si)
///   sum_{j <= l} sum_{|k| <= j, |m - k| <= l - j} R_jk M_{l-j, m-k}
/// in the order of the loops, each term a complex product added in turn.  R(j, k, re, im) and
/// M(n, m, re, im) read R_jk and M_nm (any sign of k, m).
template <class RAt, class MAt>
VH_HD inline void m2m_terms(int l, int m, const RAt& R, const MAt& M, double& sr, double& si) {
  for (int j = 0; j <= l; ++j)
    for (int k = -j; k <= j; ++k) {
      const int n = l - j, mm = m - k;
      if (mm > n || mm < -n) continue;
      double ar, ai, br, bi;
      R(j, k, ar, ai);
      M(n, mm, br, bi);
      cmul_into(ar, ai, br, bi);
      sr = sr + br;
      si = si + bi;
    }
}

/// One output of the M2M with a table (expansions.h m2m_table): m2m_terms from zero, R and M in
/// m >= 0 storage (pairs).
VH_HD inline void m2m_table_sum(const double* R, const double* M, int l, int m, double& sr, double& si) {
  sr = 0;
  si = 0;
  m2m_terms(
      l, m, [&](int j, int k, double& re, double& im) { coef(R, j, k, re, im); },
      [&](int n, int mm, double& re, double& im) { coef(M, n, mm, re, im); }, sr, si);
}

/// The M2L's table operand at (n, m), full index f = fidx(n, m) (expansions.h m2l_table): I_nm
/// from Ih (m >= 0 storage, pairs) into Ir[f], Ii[f].
VH_HD inline void m2l_table_operand(int n, int m, const double* Ih, double* Ir, double* Ii) {
  const int f = fidx(n, m);
  coef(Ih, n, m, Ir[f], Ii[f]);
}

/// The M2L's multipole operand at (n, m): the folded multipole (-1)^n conj(M_nm) of each
/// component a (m >= 0 storage at M + 2 a nc) into Mr[a nf + f], Mi[a nf + f].
VH_HD inline void m2l_multipole_operand(int n, int m, int nc, int nf, const double* M, double* Mr, double* Mi) {
  const int f = fidx(n, m);
  for (int a = 0; a < 3; ++a) {
    double re, im;
    coef(M + 2 * a * nc, n, m, re, im);
    m2l_fold(n, re, im);
    Mr[a * nf + f] = re;
    Mi[a * nf + f] = im;
  }
}

/// Both of the M2L's operands at the full index f (m2l_table, and a thread's share on the GPU).
VH_HD inline void m2l_operands(int f, int nc, int nf, const double* Ih, const double* M, double* Ir, double* Ii,
                               double* Mr, double* Mi) {
  const int n = degree_of(f), m = f - n * n - n;
  m2l_table_operand(n, m, Ih, Ir, Ii);
  m2l_multipole_operand(n, m, nc, nf, M, Mr, Mi);
}

/// One output (l, m) of the M2L with a table (expansions.h m2l_table) for the three components:
/// sum_{j <= p - l} sum_k M'_jk I_{l+j, m+k} in this order, where I(f, re, im) reads the table
/// and M(a, f, re, im) component a of the folded multipole (-1)^j conj(M_jk), both at the full
/// index f (any layout: the GPU's FFT contraction reads (re, im) pairs, m2l_table_sum split arrays).
template <class IAt, class MAt>
VH_HD inline void m2l_table_terms(int p, int l, int m, const IAt& I, const MAt& M, double sr[3], double si[3]) {
  for (int a = 0; a < 3; ++a) sr[a] = si[a] = 0;
  for (int j = 0; j <= p - l; ++j) {
    const int bi = (l + j) * (l + j) + (l + j) + m, bm = j * j + j;
    for (int k = -j; k <= j; ++k) {
      double ir, ii;
      I(bi + k, ir, ii);
      for (int a = 0; a < 3; ++a) {
        double mr, mi;
        M(a, bm + k, mr, mi);
        sr[a] += mr * ir - mi * ii;
        si[a] += mr * ii + mi * ir;
      }
    }
  }
}

/// m2l_table_terms on the full-layout real and imaginary parts Ir, Ii of the table and Mr[a],
/// Mi[a] of the folded multipole, stride nf between components.
VH_HD inline void m2l_table_sum(int p, int l, int m, const double* Ir, const double* Ii, const double* Mr,
                                const double* Mi, int nf, double sr[3], double si[3]) {
  m2l_table_terms(
      p, l, m,
      [&](int f, double& re, double& im) {
        re = Ir[f];
        im = Ii[f];
      },
      [&](int a, int f, double& re, double& im) {
        re = Mr[a * nf + f];
        im = Mi[a * nf + f];
      },
      sr, si);
}

/// The L2L shift (expansions.h l2l), the terms of degree n of output (j, k) of C components:
///   Lout_jk += sum_{q = -n..n} L_{n+j, k+q} conj(R_nq(d))
/// added to (sr[c], si[c]) in order of q.  L(c, f, re, im) reads component c of L at full index
/// f (any sign of m), R(q, re, im) reads R_nq(d).  The whole shift sums n = 0 .. p - j; L2P
/// stops at j = 2.
template <int C, class LAt, class RAt>
VH_HD inline void l2l_terms(int n, int j, int k, const LAt& L, const RAt& R, double* sr, double* si) {
  for (int q = -n; q <= n; ++q) {
    double rr, ri;
    R(q, rr, ri);
    ri = -ri;  // conj
    const int f = fidx(n + j, k + q);
    for (int c = 0; c < C; ++c) {
      double lr, li;
      L(c, f, lr, li);
      sr[c] += lr * rr - li * ri;
      si[c] += lr * ri + li * rr;
    }
  }
}

}  // namespace vh::fmm

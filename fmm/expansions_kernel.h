// Per-coefficient math of the solid-harmonic expansions (fmm/expansions.h), one inline
// definition for the CPU (expansions.cpp, periodic.cpp) and the GPU far field (upward_gpu.cu,
// m2l_gpu.cu, downward_gpu.cu, periodic_gpu.cu): VH_HD.  A complex number is a (re, im) pair of
// doubles, the layout of std::complex<double> and double2 alike.
//
//   storage:  m >= 0 only, coefficient (l, m) at cidx(l, m) = l (l + 1) / 2 + m (ncoef(p) of
//             them); the M2L's full layout has -l <= m <= l at fidx(l, m) = l^2 + l + m.
//   recurrences (Helgaker, Joergensen & Olsen 9.13.78-82), r^2 = x^2 + y^2 + z^2:
//     R_00 = 1,        R_{l+1,l+1} = -(x + i y) / (2l + 2) R_ll,
//                      R_{l+1,m}   = ((2l + 1) z R_lm - r^2 R_{l-1,m}) / ((l + m + 1)(l - m + 1));
//     I_00 = 1 / r,    I_{l+1,l+1} = -(2l + 1) (x + i y) / r^2 I_ll,
//                      I_{l+1,m}   = ((2l + 1) z I_lm - (l^2 - m^2) I_{l-1,m}) / r^2.
//   L2P: the local expansion shifted to the target, degrees <= 2, gives the gradient and Hessian
//        of the three potentials phi_a (potential_derivatives) and u = curl psi,
//        du_m/dx_l = eps_{mjk} d_l d_j psi_k with psi = phi / (4 pi) (velocity_from_potentials).
// Each function rounds operation by operation as written (host: ISO C++, no contraction); the
// GPU kernels may contract multiply-adds, periodic_gpu.cu (-fmad=false) may not.
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

/// (re, im) <- a (re, im) for the complex a = (ar, ai).
VH_HD inline void cmul_into(double ar, double ai, double& re, double& im) {
  const double r = ar * re - ai * im, i = ar * im + ai * re;
  re = r;
  im = i;
}

/// R_{l+1,l+1} from R_ll, in place: -(x + i y) / (2l + 2) R_ll.
VH_HD inline void regular_diagonal(int l, double x, double y, double& re, double& im) {
  const double d = double(2 * l + 2);
  cmul_into(-x / d, -y / d, re, im);
}

/// R_{l+1,m} from R_lm = (cr, ci) and R_{l-1,m} = (pr, pi) (zero for m = l).
VH_HD inline void regular_up(int l, int m, double z, double r2, double cr, double ci, double pr, double pi, double& nr,
                             double& ni) {
  const double s = double(2 * l + 1) * z, den = double((l + m + 1) * (l - m + 1));
  nr = (s * cr - r2 * pr) / den;
  ni = (s * ci - r2 * pi) / den;
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

/// The M2L's folded source coefficient (-1)^n conj(M_nm) at full index f = fidx(n, m): the
/// stored coefficient cidx(n, |m|) it comes from and the signs of its real and imaginary parts
/// (M_{n,-m} = (-1)^m conj(M_nm)), packed as bits 0..19 the index, 20..25 the degree n, bit 30
/// negates Re, bit 31 negates Im.
VH_HD inline unsigned fold_map(int f) {
  int n = 0;
  while ((n + 1) * (n + 1) <= f) ++n;
  const int m = f - n * n - n;
  // negm for m < 0: odd m (-x, y), even m (x, -y); then conj and (-1)^n.
  bool nre = false, nim = true;  // conj
  if (m < 0) {
    if ((-m) & 1) nre = !nre; else nim = !nim;
  }
  if (n & 1) {
    nre = !nre;
    nim = !nim;
  }
  return static_cast<unsigned>(cidx(n, m < 0 ? -m : m)) | static_cast<unsigned>(n) << 20 | (nre ? 1u << 30 : 0u) |
         (nim ? 1u << 31 : 0u);
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

/// X_{l,m} for any -l <= m <= l from the m >= 0 storage X (pairs): X_{l,-m} = (-1)^m conj X_lm.
VH_HD inline void coef(const double* X, int l, int m, double& re, double& im) {
  const int c = cidx(l, m < 0 ? -m : m);
  re = X[2 * c];
  im = X[2 * c + 1];
  if (m < 0) {
    im = -im;
    if ((-m) & 1) {
      re = -re;
      im = -im;
    }
  }
}

/// One output of the M2M with a table (expansions.h m2m_table): component sum for (l, m) of
/// sum_{j <= l} sum_k R_jk M_{l-j, m-k}, R and M in m >= 0 storage (pairs); the sum in the
/// order of the loops, each term a complex product added in turn.
VH_HD inline void m2m_table_sum(const double* R, const double* M, int l, int m, double& sr, double& si) {
  sr = 0;
  si = 0;
  for (int j = 0; j <= l; ++j)
    for (int k = -j; k <= j; ++k) {
      const int n = l - j, mm = m - k;
      if (mm > n || mm < -n) continue;
      double ar, ai, br, bi;
      coef(R, j, k, ar, ai);
      coef(M, n, mm, br, bi);
      cmul_into(ar, ai, br, bi);
      sr = sr + br;
      si = si + bi;
    }
}

/// One output (l, m) of the M2L with a table (expansions.h m2l_table) for the three components:
/// sum_{j <= p - l} sum_k M'_jk I_{l+j, m+k}, on the full-layout real and imaginary parts Ir, Ii
/// of the table and Mr[a], Mi[a] of the folded multipole (-1)^j conj(M_jk), stride nf between
/// components.
VH_HD inline void m2l_table_sum(int p, int l, int m, const double* Ir, const double* Ii, const double* Mr,
                                const double* Mi, int nf, double sr[3], double si[3]) {
  for (int a = 0; a < 3; ++a) sr[a] = si[a] = 0;
  for (int j = 0; j <= p - l; ++j) {
    const int bi = (l + j) * (l + j) + (l + j) + m, bm = j * j + j;
    for (int k = -j; k <= j; ++k) {
      const double ir = Ir[bi + k], ii = Ii[bi + k];
      for (int a = 0; a < 3; ++a) {
        sr[a] += Mr[a * nf + bm + k] * ir - Mi[a * nf + bm + k] * ii;
        si[a] += Mr[a * nf + bm + k] * ii + Mi[a * nf + bm + k] * ir;
      }
    }
  }
}

}  // namespace vh::fmm

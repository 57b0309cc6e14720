#include "fmm/expansions.h"

#include <cmath>

namespace vh::fmm {

namespace {

// Rows 1 .. p of R or I (harmonic_row_up) after row 0, in place; cplx is (re, im) pairs.
template <bool Irr>
void harmonic_rows(double x, double y, double z, double q, int p, cplx* X) {
  double* d = reinterpret_cast<double*>(X);
  for (int l = 0; l < p; ++l)
    harmonic_row_up<Irr>(l, x, y, z, q, d + 2 * idx(l, 0), l > 0 ? d + 2 * idx(l - 1, 0) : nullptr,
                         d + 2 * idx(l + 1, 0));
}

}  // namespace

void solid_harmonics(const Vec3& r, int p, cplx* R, cplx* I) {
  const double x = r[0], y = r[1], z = r[2];
  const double r2 = x * x + y * y + z * z;
  if (R) {
    R[0] = 1.0;
    harmonic_rows<false>(x, y, z, r2, p, R);
  }
  if (!I) return;
  const double inv_r2 = 1.0 / r2;
  I[0] = std::sqrt(inv_r2);
  harmonic_rows<true>(x, y, z, inv_r2, p, I);
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

namespace {

constexpr int kNf = FoldedMultipole::nf;

// The M2L's sums, output degrees 0..lmax (lmax = p for a full M2L, 2 for the M2P) into Lout,
// stride nc_out between components, from the table's operands Ir, Ii and the folded multipole's
// Mr, Mi (m2l_operands): full (l, -l..l) real/imaginary arrays, index fidx(l, m), so that the
// inner sums over k are contiguous dot products.  Inlined where the operands are made: called
// apart, the CPU's M2L stage took 5 % longer (fmm_bench, one rank, p 14).
[[gnu::always_inline]] inline void m2l_sums(int p, int lmax, const double* Ir, const double* Ii, const double* Mr,
                                            const double* Mi, cplx* Lout, int nc_out) {
  for (int l = 0; l <= lmax; ++l)
    for (int m = 0; m <= l; ++m) {
      double sr[3], si[3];
      m2l_table_sum(p, l, m, Ir, Ii, Mr, Mi, kNf, sr, si);
      for (int a = 0; a < 3; ++a) Lout[a * nc_out + idx(l, m)] += cplx(sr[a], si[a]);
    }
}

}  // namespace

void m2l_table(int p, const cplx* Ih, const cplx* Mc, cplx* Lc) {
  const int nc = ncoef(p);
  double Ir[kNf], Ii[kNf], Mr[3 * kNf], Mi[3 * kNf];
  for (int f = 0; f < (p + 1) * (p + 1); ++f)
    m2l_operands(f, nc, kNf, reinterpret_cast<const double*>(Ih), reinterpret_cast<const double*>(Mc), Ir, Ii, Mr,
                 Mi);
  m2l_sums(p, p, Ir, Ii, Mr, Mi, Lc, nc);
}

void fold_multipole(int p, const cplx* Mc, FoldedMultipole& F) {
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m)
      m2l_multipole_operand(n, m, ncoef(p), kNf, reinterpret_cast<const double*>(Mc), F.re, F.im);
}

void m2p_table(int p, const cplx* Ih, const FoldedMultipole& F, double dphi[3][3], double hphi[3][3][3]) {
  double Ir[kNf], Ii[kNf];
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m) m2l_table_operand(n, m, reinterpret_cast<const double*>(Ih), Ir, Ii);
  cplx Lt[3 * 6] = {};  // degrees 0..2 of the local expansion about the target
  m2l_sums(p, p < 2 ? p : 2, Ir, Ii, F.re, F.im, Lt, 6);
  potential_derivatives(reinterpret_cast<const double*>(Lt), dphi, hphi);
}

void m2l(int p, const Vec3& d, const cplx* Mc, cplx* Lc) {
  cplx I[kMaxCoef];
  solid_harmonics(d, p, nullptr, I);
  m2l_table(p, I, Mc, Lc);
}

namespace {

// L2L restricted to output degrees 0..jmax (jmax = p for a full shift): l2l_terms of
// fmm/expansions_kernel.h on R and Lc in the full layout (pairs at 2 fidx).
void l2l_upto(int p, int jmax, const cplx* R, const cplx* Lc, cplx* Lout, int nc_out) {
  const int nc = ncoef(p);
  constexpr int nf = (kMaxOrder + 1) * (kMaxOrder + 1);
  double Rf[2 * nf], Lf[3][2 * nf];
  const double* Rd = reinterpret_cast<const double*>(R);
  const double* Ld = reinterpret_cast<const double*>(Lc);
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m) {
      const int f = fidx(n, m);
      coef(Rd, n, m, Rf[2 * f], Rf[2 * f + 1]);
      for (int a = 0; a < 3; ++a) coef(Ld + 2 * a * nc, n, m, Lf[a][2 * f], Lf[a][2 * f + 1]);
    }
  for (int j = 0; j <= jmax; ++j)
    for (int k = 0; k <= j; ++k) {
      double sr[3] = {0, 0, 0}, si[3] = {0, 0, 0};
      for (int n = 0; n <= p - j; ++n)
        l2l_terms<3>(
            n, j, k,
            [&](int a, int f, double& re, double& im) {
              re = Lf[a][2 * f];
              im = Lf[a][2 * f + 1];
            },
            [&](int q, double& re, double& im) {
              re = Rf[2 * fidx(n, q)];
              im = Rf[2 * fidx(n, q) + 1];
            },
            sr, si);
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

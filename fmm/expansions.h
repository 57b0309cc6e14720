// Laplace multipole and local expansions in complex scaled solid harmonics.
//
// Normalisation (Helgaker, Joergensen & Olsen, "Molecular Electronic-Structure Theory", 9.13):
//   regular   R_lm(r) = r^l P_l^m(cos t) e^{i m phi} / (l+m)!
//   irregular I_lm(r) = (l-m)! P_l^m(cos t) e^{i m phi} / r^{l+1}
// (P_l^m with the Condon-Shortley phase), built by the recurrences of solid_harmonics().
// X_{l,-m} = (-1)^m conj(X_{lm}) for R, I and all expansions below, so only m >= 0 is stored,
// at index l(l+1)/2 + m (see idx()).  Identities used (all checked in tests/fmm):
//   1/|r - a| = sum_lm conj(R_lm(a)) I_lm(r)                     for |a| < |r|
//   R_lm(a + b) = sum_jk R_jk(a) R_{l-j,m-k}(b)
//   I_lm(a + b) = sum_jk (-1)^j conj(R_jk(b)) I_{l+j,m+k}(a)       for |b| < |a|
// Stored coefficients, for a charge q at x_q and the potential phi(r) = sum_q q / |r - x_q|
// (the 1/(4 pi) of the vector potential is applied by the caller):
//   multipole about c:  Mc_lm = sum_q q R_lm(x_q - c),   phi(r) = sum_lm conj(Mc_lm) I_lm(r - c)
//   local about c:      Lc_lm = sum_q q I_lm(x_q - c),   phi(r) = sum_lm Lc_lm conj(R_lm(r - c))
// Expansion order p: degrees l = 0..p; M2L keeps l + j <= p (triangular truncation):
//   Lc_lm += sum_jk (-1)^j conj(Mc_jk) I_{l+j,m+k}(c_s - c_t).
// Every expansion carries three charges, the three components of the vector strength alpha.
#pragma once

#include <array>
#include <complex>
#include <vector>

#include "fmm/expansions_kernel.h"
#include "fmm/types.h"

namespace vh::fmm {

using cplx = std::complex<double>;


/// Largest supported order and its number of stored coefficients.
constexpr int kMaxOrder = 30;
constexpr int kMaxCoef = (kMaxOrder + 1) * (kMaxOrder + 2) / 2;

/// Number of stored (l, m >= 0) coefficients for degrees 0..p.
constexpr int ncoef(int p) { return (p + 1) * (p + 2) / 2; }
/// Storage index of (l, m), 0 <= m <= l (cidx of fmm/expansions_kernel.h).
inline int idx(int l, int m) { return cidx(l, m); }

/// Regular R (when R != nullptr) and irregular I (when I != nullptr), degrees 0..p, at r.
/// I needs r != 0.  Arrays hold ncoef(p) entries.
void solid_harmonics(const Vec3& r, int p, cplx* R, cplx* I);

/// Three-component expansion: coefficient c of component a at [a * ncoef(p) + c].
using Expansion = std::vector<cplx>;

/// P2M: add charges q (3 components) at offsets d = x_q - c to multipole Mc (order p).
void p2m(int p, const Vec3& d, const Vec3& q, cplx* Mc);
/// M2M: shift child multipole (centre c) to the parent centre c2, d = c - c2; adds into Mp.
void m2m(int p, const Vec3& d, const cplx* Mc, cplx* Mp);
/// M2M with a precomputed table R = R_lm(d) (linear in R: a sum of tables shifts one multipole
/// to several centres at once, as the periodic lattice does).
void m2m_table(int p, const cplx* R, const cplx* Mc, cplx* Mp);
/// M2L: multipole at c_s to local at c_t, d = c_s - c_t (|d| > both radii); adds into Lc.
void m2l(int p, const Vec3& d, const cplx* Mc, cplx* Lc);
/// M2L with a precomputed table Ih = I_lm(d) of degree 0..p (the lattice uses sums of them).
void m2l_table(int p, const cplx* Ih, const cplx* Mc, cplx* Lc);
/// A multipole as the M2L's sums read it: (-1)^n conj(M_nm) of each component at the full index
/// fidx(n, m) (fmm/expansions_kernel.h m2l_multipole_operand), split into real and imaginary
/// parts. Folded once, it serves every target of an M2P.
struct FoldedMultipole {
  static constexpr int nf = (kMaxOrder + 1) * (kMaxOrder + 1);
  double re[3 * nf], im[3 * nf];
};
/// Fold the multipole Mc (order p) into F.
void fold_multipole(int p, const cplx* Mc, FoldedMultipole& F);
/// M2P with a table Ih = I_lm(d), d = c - x from the target x to the multipole's centre c (a sum
/// of tables: several images of one multipole at once), of the folded multipole F: the gradient
/// and Hessian of the three potentials at x (as l2p) from the M2L into the degrees 0..2 of a
/// local expansion about x itself, whose L2P at x is those degrees alone.  The M2L's truncation
/// (l + j <= p), so it equals m2l_table into a zero expansion about x followed by l2p at d = 0;
/// O(p^2) where that is O(p^4).
/// Valid where the M2L about x is (|d| > the multipole's radius): the LET's receiver evaluates
/// a remote multipole at the targets of a leaf too close for an M2L into the leaf (fmm/let.h).
void m2p_table(int p, const cplx* Ih, const FoldedMultipole& F, double dphi[3][3], double hphi[3][3][3]);
/// L2L: shift local at c to c2, d = c2 - c; adds into Lchild.
void l2l(int p, const Vec3& d, const cplx* Lc, cplx* Lchild);
/// L2P: gradient and Hessian of the three potentials phi_a at c + d:
/// dphi[a][j] = d phi_a / d x_j, hphi[a][j][k] = d^2 phi_a / d x_j d x_k (no 1/(4 pi)).
void l2p(int p, const Vec3& d, const cplx* Lc, double dphi[3][3], double hphi[3][3][3]);

}  // namespace vh::fmm

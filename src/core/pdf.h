// PDFs of grid fields as histograms on fixed bins, and the distance between two of them
// (`vortexhit compare`: the PDF of Q and the joint PDF of (Q, R) of two solvers).
//
// A histogram here is the fraction of samples in each bin (Σ p_i = 1), not a density: the
// density is p_i / width. Bins are equal on [lo, hi); samples outside fall into the end bins,
// so every finite sample counts and two histograms on the same bins always hold the same total.
// Non-finite samples are not counted (a field with none finite gives NaN in every bin).
//
// The distance is the total variation of the two histograms,
//   δ(p, q) = ½ Σ_i |p_i − q_i|   ∈ [0, 1],
// chosen over the Hellinger distance (also a bounded metric: H² ≤ δ ≤ √2 H) because it says
// directly what differs: δ is the largest difference, over every event made of bins, of the
// probability the two fields give it (0: same histogram; 1: disjoint supports). Binning can
// only lower it (δ of the histograms ≤ δ of the continuous PDFs), with equality where p − q
// keeps one sign in every bin. Grid points are not independent samples, so two independent
// realisations of one flow are not at 0: measure that floor with a second seed before setting
// a tolerance.
#pragma once

#include <cstddef>
#include <vector>

namespace vh {

/// `n` equal bins on [lo, hi); index() clamps to the end bins.
struct Bins {
  double lo = 0.0, hi = 1.0;
  int n = 1;

  double width() const { return (hi - lo) / n; }
  double centre(int i) const { return lo + (i + 0.5) * width(); }
  int index(double v) const;
};

/// Fraction of the finite samples v[i]/scale in each bin of `b` (n values).
std::vector<double> histogram(const std::vector<double>& v, double scale, const Bins& b);

/// Joint histogram of (x[i]/sx, y[i]/sy): p[i·by.n + j] is the fraction in bin i of `bx` and
/// bin j of `by` (bx.n · by.n values). x and y must have the same length.
std::vector<double> histogram2d(const std::vector<double>& x, double sx, const std::vector<double>& y, double sy,
                                const Bins& bx, const Bins& by);

/// ½ Σ|p_i − q_i| of two histograms on the same bins (NaN when any p_i or q_i is NaN).
double total_variation(const std::vector<double>& p, const std::vector<double>& q);

}  // namespace vh

// `vortexhit compare`: do two solvers (or two runs) agree? (docs/design.md "The program's surface")
//
//   vortexhit compare RUN_DIR [--solvers A,B]          solver B against solver A in one run
//                                                      (default spectral,vortex)
//   vortexhit compare RUN_A RUN_B [--solver S]          solver S of run B against run A
//                                                      (default: the first of spectral, vortex,
//                                                      initial that both runs hold)
//   vortexhit compare RUN_A RUN_B --solvers A,B        run B's solver B against run A's solver A
//
// Two runs may have different N: a run against a finer reference run of the same deck (the
// initial field is keyed by global wavenumber, so both start from the same modes). Then the
// series compare as always, the spectra on the shells both runs hold (k ≤ the coarser run's
// last shell; the bands cut at its N/3), and the Q fields are not compared (their measures are
// taken point by point on one grid; a Q check then fails as not measured).
//
// A is the reference: ratios are B/A, relative differences are taken against A. Times are
// given as t/T with T = /initial/series/T[0] of run A (the initial field's eddy turnover).
//
// What it reports (and writes with --json FILE):
//   - over the common output times (/<solver>/series/t equal within 1e-6 T): K_B/K_A,
//     ε_B/ε_A, and Re_λ, L, T of both;
//   - at each requested t/T (--at, default 1,5,10) the nearest common spectrum time, and there
//     the band-wise relative difference Σ_band |E_B − E_A| / Σ_band E_A over the bands
//     1–4, 5–16, 17–64, 65–256, … cut at k = N/3 (a last band cut to less than a quarter of
//     its width joins the one before: N = 256 gives 1–4, 5–16, 17–85), plus k_agree: the
//     largest k such that |E_B(k')/E_A(k') − 1| ≤ --spectrum-tol (default 0.1) for every
//     shell 1 ≤ k' ≤ k; and which shells lie beyond each side's k_max, the largest wavenumber
//     its solver keeps (/<solver>/series/kmax, written by the run from
//     spectral::resolved_kmax and vortex::resolved_kmax; shells k > k_max): a line above the
//     table, a `*` on the bands that hold such shells, and after k_agree the shells of the
//     agreement that lie beyond (JSON: solver_kmax_a, solver_kmax_b, and per spectrum
//     first_shell_beyond_kmax; null where a run file has no series kmax, older runs, which
//     compare as before);
//   - for the Q fields (fields_*.h5) nearest each requested t/T that both sides hold at the
//     same time: the correlation coefficient of Q_A and Q_B over the grid, and the Jaccard
//     index |S_A ∩ S_B| / |S_A ∪ S_B| of S = {Q > q ⟨Q²⟩^½}, each field with its own rms,
//     q = --q-level (default 1);
//   - for the same fields, two PDFs of each side and the distance between A's and B's:
//     (a) the PDF of Q/⟨Q²⟩^½ (the stored Q, each field with its own rms), 200 bins of 0.1
//         on [−10, 10);
//     (b) the joint PDF of the invariants Q = −½ tr(A²), R = −⅓ tr(A³) (= −det A) of the
//         velocity gradient A = ∇u (the "teardrop"; Chong, Perry & Cantwell 1990), A by
//         spectral derivatives of the stored velocity (core/diagnostics.h,
//         gradient_invariants()), in the units of Ooi et al. (JFM 381, 1999): Q/⟨Q_W⟩ and
//         R/⟨Q_W⟩^{3/2} with ⟨Q_W⟩ = ⟨ω·ω⟩/4 of each field, 80 × 80 bins of 0.25 on [−10, 10)².
//         ⟨Q_W⟩ = ε/4ν = 1/(4τ_η²) in homogeneous flow: in these Kolmogorov units the
//         teardrop has nearly the same shape across flows and Reynolds numbers, so a distance
//         measures the shape, not the amplitude (that is ε's ratio, above);
//     samples beyond the bins count in the end bins. The distance is the total variation
//     δ = ½ Σ_bins |p_A − p_B| ∈ [0, 1] (core/pdf.h says why this one): the largest difference
//     of the probability the two fields give any set of bins. R is computed here, from the
//     velocity, rather than stored: fields files keep their layout (older runs compare too)
//     and a run does not pay nine more FFTs per output. Grid points are correlated samples,
//     so two realisations of one flow are not at δ = 0 (a second seed shows the floor).
//
// Checks, each only when its flag is given (exit 1 when any fails, also when the quantity
// could not be measured, e.g. no common Q fields):
//   --K-tol X  --epsilon-tol X  --Re_lambda-tol X  --L-tol X  --T-tol X
//                        max over common output times of |B/A − 1| of that series ≤ X
//                        (flag names are case-insensitive, '_' and '-' alike: --k-tol works)
//   --band-tol X         every band's relative spectrum difference at every --at time ≤ X
//   --k-agree-min K      k_agree ≥ K at every --at time
//   --q-corr-min C       Q correlation ≥ C at every --at time
//   --q-jaccard-min J    Jaccard index ≥ J at every --at time
//   --q-pdf-max D        distance of the Q PDFs ≤ D at every --at time
//   --qr-pdf-max D       distance of the (Q, R) joint PDFs ≤ D at every --at time
//
// Exit status: 0 all requested checks passed (or none requested), 1 a check failed, 2 bad
// input (unreadable file, missing solver or dataset), with a message naming the
// file and dataset (thrown as vh::InputError; main.cpp maps it).
#pragma once

#include <string>
#include <vector>

namespace vh::app {

/// Usage lines of the compare command, for `vortexhit help` and error messages.
extern const char* const kCompareUsage;

/// Runs `vortexhit compare` with `args` (the words after "compare"). Prints the report to
/// stdout and returns the exit status (0 or 1); throws vh::InputError for bad input.
int compare(const std::vector<std::string>& args);

}  // namespace vh::app

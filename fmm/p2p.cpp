#include "fmm/p2p.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fmm/p2p_kernel.h"


// CPU near field, vectorised.  Sources are copied in tiles of kTile into structure-of-arrays
// buffers; for one target the loop over a tile has no branches (selects only), its own exp and
// erfc (below), so that GCC vectorises it (`omp simd`; clones for AVX2+FMA and AVX-512 chosen
// at run time, the baseline x86-64 build stays SSE2).  The radial factors are those of
// fmm/p2p_kernel.h (kernel_ce, kernel_F, kernel_scale) with g = 1 - (erfc(rho) + ce) and
// erfc(rho) = e^{-rho^2} erfcx(rho), erfcx(x) = e^{x^2} erfc(x); rho is clamped to
// [0.5, sqrt(45)]: beyond, e^{-45} (...) < 1e-18 and g = 1, F = 3 to round-off as in
// kernel_radial's far branch.  Pairs with rho < 0.5 (the series branch of kernel_radial, and the
// self pair) are left out of the vector loop (masked) and, only for the targets that have some
// (flagged by the vector loop), added by a scalar pass with p2p_pair.
// Accuracy against p2p_pair in long double: ~1e-14 relative (tests/fmm/test_fmm_parallel.cpp).

namespace vh::fmm {

namespace {

constexpr int kTile = 256;
// The vector loop's lower end of rho: kernel_radial's series branch below.
constexpr double kRhoSeries = 0.5;
static_assert(kRhoSeries * kRhoSeries == kSeriesRho2, "the series branch of fmm/p2p_kernel.h");

struct alignas(64) SourceTile {
  double x[kTile], y[kTile], z[kTile];     // positions
  double ax[kTile], ay[kTile], az[kTile];  // strengths
  double is[kTile];                        // 1 / (sqrt(2) sigma)
};

// e^{-t} for t in [0, 700]: t = k ln2 + r, |r| <= ln2/2 (Cody-Waite), Taylor degree 13
// (remainder < 4e-18), 2^k built in the exponent bits.
[[gnu::always_inline]] inline double exp_neg(double t) {
  const double x = -t;
  const double shifter = 6755399441055744.0;  // 1.5 * 2^52: rounds to an integer in the low bits
  const double kd0 = x * 1.4426950408889634 + shifter;
  std::int64_t kbits;
  __builtin_memcpy(&kbits, &kd0, 8);
  const double kd = kd0 - shifter;
  const double r = (x - kd * 6.93147180369123816490e-01) - kd * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // low bits of kbits hold k (two's complement); (k + 1023) << 52 is 2^k for k > -1023.
  const std::int64_t sbits = static_cast<std::int64_t>(static_cast<std::uint64_t>(kbits + 1023) << 52);
  double scale;
  __builtin_memcpy(&scale, &sbits, 8);
  return p * scale;
}

// 1/sqrt(x) for x > 0 (normal): the classic bit-level first guess (error < 3.5%) and four
// Newton steps (3.5e-2 -> 1.8e-3 -> 4.6e-6 -> 3e-11 -> round-off, a few ulp).  Not libm's
// sqrt: with errno semantics (the default, -fmath-errno) GCC does not vectorise a call to it.
[[gnu::always_inline]] inline double rsqrt(double x) {
  std::int64_t bits;
  __builtin_memcpy(&bits, &x, 8);
  bits = 0x5fe6eb50c7b537a9LL - static_cast<std::int64_t>(static_cast<std::uint64_t>(bits) >> 1);
  double y;
  __builtin_memcpy(&y, &bits, 8);
  const double hx = 0.5 * x;
  y = y * (1.5 - hx * y * y);
  y = y * (1.5 - hx * y * y);
  y = y * (1.5 - hx * y * y);
  y = y * (1.5 - hx * y * y);
  return y;
}

// erfcx(x) = e^{x^2} erfc(x) for x in [0.49, 6.75]: (1 + 2x) erfcx(x) = P(z) with
// Y = (x - 2)/(x + 2), z = (Y - yc)/yh in [-1, 1] (after Weideman 1994), P of degree 18 fitted
// (least squares in mpmath, relative) to 1.5e-16 relative in double.
[[gnu::always_inline]] inline double erfcx_mid(double x) {
  const double a = x + 2.0, b = 1.0 + 2.0 * x;
  const double inv = 1.0 / (a * b);
  const double Y = (x - 2.0) * b * inv;
  const double z = (Y + 0.031784279977051064) * (1.0 / 0.574641422834194);
  double p = -2.7491992113320193e-11;
  p = p * z + 6.820412110817221e-11;
  p = p * z + 6.405017197361201e-10;
  p = p * z + 4.5931557257027576e-10;
  p = p * z + -6.308595040196996e-09;
  p = p * z + -2.2592472369543435e-08;
  p = p * z + 1.5909281590811765e-08;
  p = p * z + 3.360556247954292e-07;
  p = p * z + 6.037556995719219e-07;
  p = p * z + -3.495186599104682e-06;
  p = p * z + -1.5673921843717077e-05;
  p = p * z + 3.361233139767717e-05;
  p = p * z + 0.0003024497564080532;
  p = p * z + -0.0006057853357968562;
  p = p * z + -0.0057587080425165775;
  p = p * z + 0.03242096578127882;
  p = p * z + -0.060098423420666035;
  p = p * z + -0.04695130633300669;
  p = p * z + 1.2797537596495459;
  return p * a * inv;
}

// Field of sources [0, n) of the tile at the target x0: adds into acc[12] (u, then grad row
// by row); returns how many sources have rho < 0.5 (left out).
[[gnu::always_inline]] inline int tile_kernel_body(const double x0, const double x1, const double x2,
                                                    const SourceTile& S, int n, double* acc,
                                                    double* small) {
  constexpr double kInv4Pi = 1.0 / kFourPi;
  constexpr double kRhoMax = 6.7082039324993690892;  // sqrt(45)
  double u0 = 0, u1 = 0, u2 = 0;
  double g00 = 0, g01 = 0, g02 = 0, g10 = 0, g11 = 0, g12 = 0, g20 = 0, g21 = 0, g22 = 0;
  double nsmall = 0;  // a double: GCC does not vectorise int and double reductions together
#pragma omp simd reduction(+ : u0, u1, u2, g00, g01, g02, g10, g11, g12, g20, g21, g22, nsmall)
  for (int j = 0; j < n; ++j) {
    const double rx = x0 - S.x[j], ry = x1 - S.y[j], rz = x2 - S.z[j];
    const double r2 = rx * rx + ry * ry + rz * rz;
    const double ir = rsqrt(r2 > 1e-300 ? r2 : 1e-300);  // r = 0 (self pair) is masked below
    const double rho_raw = r2 * ir * S.is[j];
    const bool valid = rho_raw >= kRhoSeries;
    const double flag = valid ? 0.0 : 1.0;
    nsmall += flag;
    small[j] = flag;
    const double rho_lo = rho_raw > kRhoSeries ? rho_raw : kRhoSeries;
    const double rho = rho_lo < kRhoMax ? rho_lo : kRhoMax;
    const double t = rho * rho;
    const double e = exp_neg(t);
    const double ce = kernel_ce(rho, e);
    const double g = 1.0 - (e * erfcx_mid(rho) + ce);
    const double F = kernel_F(g, t, ce);
    const double ir2 = ir * ir;
    const double inv3 = valid ? kInv4Pi * ir2 * ir : 0.0;  // 1/(4 pi r^3)
    double G, F5;
    kernel_scale(g, F, inv3, ir2, G, F5);
    const double ax = S.ax[j], ay = S.ay[j], az = S.az[j];
    const double cx = ay * rz - az * ry, cy = az * rx - ax * rz, cz = ax * ry - ay * rx;
    u0 += G * cx;
    u1 += G * cy;
    u2 += G * cz;
    const double fx = F5 * cx, fy = F5 * cy, fz = F5 * cz;
    g00 -= fx * rx;
    g01 += -fx * ry - G * az;
    g02 += -fx * rz + G * ay;
    g10 += -fy * rx + G * az;
    g11 -= fy * ry;
    g12 += -fy * rz - G * ax;
    g20 += -fz * rx - G * ay;
    g21 += -fz * ry + G * ax;
    g22 -= fz * rz;
  }
  acc[0] += u0;
  acc[1] += u1;
  acc[2] += u2;
  acc[3] += g00;
  acc[4] += g01;
  acc[5] += g02;
  acc[6] += g10;
  acc[7] += g11;
  acc[8] += g12;
  acc[9] += g20;
  acc[10] += g21;
  acc[11] += g22;
  return static_cast<int>(nsmall);
}

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define VH_P2P_MULTIVERSION 1
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) int tile_kernel_avx512(
    double x0, double x1, double x2, const SourceTile& S, int n, double* acc, double* small) {
  return tile_kernel_body(x0, x1, x2, S, n, acc, small);
}
__attribute__((target("avx2,fma"))) int tile_kernel_avx2(double x0, double x1, double x2, const SourceTile& S,
                                                         int n, double* acc, double* small) {
  return tile_kernel_body(x0, x1, x2, S, n, acc, small);
}
#endif
int tile_kernel_base(double x0, double x1, double x2, const SourceTile& S, int n, double* acc, double* small) {
  return tile_kernel_body(x0, x1, x2, S, n, acc, small);
}

using TileKernel = int (*)(double, double, double, const SourceTile&, int, double*, double*);

TileKernel pick_kernel() {
#ifdef VH_P2P_MULTIVERSION
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma"))
    return tile_kernel_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return tile_kernel_avx2;
#endif
  return tile_kernel_base;
}

const TileKernel tile_kernel = pick_kernel();

void fill_tile(SourceTile& S, const Vec3* xs, const Vec3* as, const double* ss, int n) {
  for (int j = 0; j < n; ++j) {
    S.x[j] = xs[j][0];
    S.y[j] = xs[j][1];
    S.z[j] = xs[j][2];
    S.ax[j] = as[j][0];
    S.ay[j] = as[j][1];
    S.az[j] = as[j][2];
    S.is[j] = 1.0 / (1.41421356237309504880 * ss[j]);
  }
}

// Sources of one tile (offset j0 in the caller's arrays) into targets [0, nt).
void p2p_tile(const SourceTile& S, int ns, const Vec3* xt, int nt, int t_offset, const Vec3* xs, const Vec3* as,
              const double* ss, int s_offset, const Vec3& shift, bool skip_same, Vec3* u, Mat3* grad) {
  for (int i = 0; i < nt; ++i) {
    const double x0 = xt[i][0] - shift[0], x1 = xt[i][1] - shift[1], x2 = xt[i][2] - shift[2];
    double acc[12] = {};
    alignas(64) double small[kTile];
    const int nsmall = tile_kernel(x0, x1, x2, S, ns, acc, small);
    const int self = t_offset + i - s_offset;
    const int expected = (skip_same && self >= 0 && self < ns) ? 1 : 0;
    if (nsmall > expected) {
      // Close pairs (rho < 0.5): the series branch of kernel_radial, one pair at a time.
      double ui[3] = {0, 0, 0}, gi[3][3] = {};
      const double x[3] = {x0, x1, x2};
      for (int j = 0; j < ns; ++j) {
        if (small[j] == 0.0 || (skip_same && j == self)) continue;  // the vector loop took it
        const double r[3] = {x[0] - xs[j][0], x[1] - xs[j][1], x[2] - xs[j][2]};
        p2p_pair(r, as[j].data(), ss[j], ui, gi);
      }
      for (int m = 0; m < 3; ++m) {
        acc[m] += ui[m];
        for (int k = 0; k < 3; ++k) acc[3 + 3 * m + k] += gi[m][k];
      }
    }
    for (int m = 0; m < 3; ++m) {
      u[i][m] += acc[m];
      for (int k = 0; k < 3; ++k) grad[i][m][k] += acc[3 + 3 * m + k];
    }
  }
}

}  // namespace

void p2p(const Vec3* xt, int nt, int t_offset, const Vec3* xs, const Vec3* as, const double* ss, int ns,
         int s_offset, const Vec3& shift, bool skip_same, Vec3* u, Mat3* grad) {
  SourceTile S;
  for (int j0 = 0; j0 < ns; j0 += kTile) {
    const int n = std::min(kTile, ns - j0);
    fill_tile(S, xs + j0, as + j0, ss + j0, n);
    p2p_tile(S, n, xt, nt, t_offset, xs + j0, as + j0, ss + j0, s_offset + j0, shift, skip_same, u, grad);
  }
}

void direct_sum(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                const std::vector<Vec3>& targets, bool self, std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  const int nt = static_cast<int>(targets.size()), ns = static_cast<int>(x.size());
  u.assign(nt, Vec3{});
  grad.assign(nt, Mat3{});
  const Vec3 zero{};
  // Tiles outside, targets inside: each tile is converted once per block of targets.
  constexpr int kTargetBlock = 64;
#pragma omp parallel
  {
    SourceTile S;
#pragma omp for schedule(dynamic, 1)
    for (int i0 = 0; i0 < nt; i0 += kTargetBlock) {
      const int m = std::min(kTargetBlock, nt - i0);
      for (int j0 = 0; j0 < ns; j0 += kTile) {
        const int n = std::min(kTile, ns - j0);
        fill_tile(S, x.data() + j0, alpha.data() + j0, sigma.data() + j0, n);
        p2p_tile(S, n, &targets[i0], m, i0, x.data() + j0, alpha.data() + j0, sigma.data() + j0, j0, zero, self,
                 &u[i0], &grad[i0]);
      }
    }
  }
}

}  // namespace vh::fmm

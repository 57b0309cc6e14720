// fmm_bench: FMM of the regularised Biot-Savart kernel, time per evaluation of u and grad u
// (evaluate_self) for N = 2^min ... 2^max blobs in [0, 2 pi)^3 (sigma = mean spacing
// h = 2 pi / N^(1/3)), split by stage; error; least-squares slope of log time against log N.
//
//   fmm_bench [--device cpu|gpu] [--min-log2n 14] [--max-log2n 18] [--p 10] [--theta 0.4]
//             [--ncrit 64] [--tolerance 1e-6] [--images 5] [--p2p-max-pairs -1] [--periodic]
//             [--lattice | --turbulent | --white] [--precision single|double] [--m2l lists|fft] [--direct-max-log2n 18]
//             [--ref-max-log2n 24] [--jitter 0] [--shift 0] [--fmm-ref] [--repeat 3] [--csv]
//             [--resident [--overlap serial,streams,split] [--split-blocks 4] [--shares R]]
//             [--split slabs|interleaved] [--share-gpus]
//
// --jitter F moves every coordinate by a uniform random amount in [-F h, F h] (as an AB2 step
// leaves the particles of a lattice: off it, and lattice points on leaf faces into neighbour
// leaves); the error is then against a tight FMM (theta 0.25, p 16, double; --fmm-ref uses it on
// the lattice too and prints its own error against the spectral sum).  --shift F moves every
// particle by F h along each axis: a translation, so the exact field at each particle is
// unchanged (the spectral reference holds), but the lattice then sits differently in the
// octree's cells (F = 0.5: at the cells' centres instead of on their lower faces).
// Particles: uniform random (default); --lattice: the n^3 lattice (cell centres) displaced by up
// to +-0.1 h, alpha random with zero mean; --turbulent: exactly on the n^3 lattice with
// alpha = omega h^3 of a k^4 exp(-2 k^2/k_p^2) turbulent velocity field (k_p = n/16, the shared
// initial-field generator), periodic implied; --white: the same with a random solenoidal omega of
// flat spectrum (tests/fmm/spectral_reference.h), the harder case for the far field.  Lattice
// sizes need log2 N divisible by 3.
// Error: free space, against the direct sum on 1000 sampled targets; --turbulent, against the
// exact spectral sum of tests/fmm/spectral_reference.h at every particle (N <= 2^ref-max-log2n);
// other periodic runs have none.
// --device gpu: the whole evaluation on the GPU (Params::use_gpu; the host splits the cells),
// stage columns are then kernel times; and the O(N^2) GPU direct sum is timed for
// N <= 2^direct-max-log2n, with the N where the FMM wins.
//
// --resident (with --device gpu): the inputs are uploaded once and one fmm::GpuEvaluator per size
// evaluates them where they are (fmm/evaluator.h), timed with same_positions false (sort, tree
// and lists every call) and true (kept); one table row per overlap mode of the near and the far
// field (--overlap, all three by default; --split-blocks: the P2P's blocks per SM in split
// mode), columns: the input check, sort + tree, lists, the GPU stages per stream and the GPU
// wall time of P2M ... L2P with the overlap.  The error comes from one evaluate_self, the path
// that is timed (fmm.m2l = fft included), the slope from the same_positions = false totals.
// --shares R (with --resident --periodic, one process): what each rank of the vortex solver on R
// GPUs computes, one share after the other on this GPU: evaluate_own at the share's z-slab of
// every blob (share_upward without ranks: the whole upward pass, no all-reduce); a row per share
// with its stages, translations and pairs, and the GPU memory in use with its evaluator.
// --share-gpus: under mpirun, ranks may share a GPU (the bytes they exchange are those of one
// GPU a rank; the times are not: the ranks take turns on the GPU).
// Under mpirun (R > 1 ranks) on the CPU: every rank makes the same blobs and passes its share to
// the Comm overload of evaluate_self (fmm/fmm.h: the local essential tree, fmm/let.h); --split
// slabs (default: z-slabs of equal thickness, the vortex solver's partition) or interleaved
// (blob i on rank i mod R).  One row per size: the slowest rank's total and stages, the
// exchange (boxes, LETs, root multipoles; the slowest rank's), the LET bytes a rank sent (mean
// and max) and the most any rank received of what the gather would bring it (particles,
// bytes), the imbalance max/mean of the particles and of the work (total less the exchange),
// P2P pairs, M2Ls and M2Ps per particle summed over the ranks, and the error as without ranks
// over every rank's blobs. With --device gpu --resident --periodic (or --turbulent), one GPU a
// rank: the vortex solver's evaluation on R GPUs — every blob on every rank (the gathered
// sources, in rank order), the targets its own share, the upward pass shared by one all-reduce
// of the multipoles (fmm/evaluator.h share_upward); the exchange column is that all-reduce, MB
// sent the bytes a rank sends in it.
// Each size: one warm-up evaluation, then the median of --repeat.  --csv prints rows
// date,commit,device,benchmark,case,metric,value,unit (bench/README.md) after the
// table.  Cost on 2 cores of an AMD EPYC: about 1 minute up to 2^16, ~10 minutes up to 2^18.
// The largest case's memory is checked first (bench/memory_check.h): one too large for the
// machine is refused, exit 2, with the largest --max-log2n that fits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/comm.h"
#include "bench/args.h"
#include "bench/csv_rows.h"
#include "bench/memory_check.h"
#include "core/diagnostics.h"
#include "core/fft.h"
#include "core/initial_field.h"
#include "fmm/fmm.h"
#include "fmm/p2p.h"
#include "fmm/p2p_kernel.h"
#include "fmm/periodic.h"
#include "spectral_reference.h"
#ifdef VH_FMM_HAVE_CUDA
#include <cuda_runtime.h>

#include "base/device_comm.h"
#include "core/device.h"
#include "fmm/evaluator.h"
#include "fmm/p2p_gpu.h"
#endif

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using vh::fmm::Mat3;
using vh::fmm::Vec3;

struct Options {
  int min_log2n = 14, max_log2n = 18, repeat = 3, direct_max_log2n = 18, ref_max_log2n = 24;
  bool csv = false, lattice = false, turbulent = false, white = false;
  double jitter = 0;  // --jitter F: every coordinate moved by up to +-F h
  double shift = 0;   // --shift F: every coordinate moved by F h (the same for all)
  bool fmm_ref = false;  // --fmm-ref: the tight FMM reference on the lattice too
  bool resident = false;  // --resident: GpuEvaluator on device-resident inputs
  std::vector<std::string> overlap{"serial", "streams", "split"};
  int split_blocks = 4;
  int shares = 0;  // --shares R: evaluate_own for each of R z-slabs in turn, one process
  bool share_gpus = false;  // --share-gpus: under mpirun, ranks may share a GPU (contended times)
  std::string split = "slabs";  // under mpirun: the blobs' partition over the ranks
  std::string device = "cpu";
  vh::fmm::Params prm;
};

Options parse(int argc, char** argv) {
  Options o;
  for (vh::bench::Args a(argc, argv); a.next();) {
    if (a.is("--csv")) o.csv = true;
    else if (a.is("--periodic")) o.prm.periodic = true;
    else if (a.is("--lattice")) o.lattice = true;
    else if (a.is("--turbulent")) o.turbulent = o.lattice = o.prm.periodic = true;
    else if (a.is("--white")) o.white = o.turbulent = o.lattice = o.prm.periodic = true;
    else if (a.is("--direct-max-log2n")) o.direct_max_log2n = a.integer();
    else if (a.is("--ref-max-log2n")) o.ref_max_log2n = a.integer();
    else if (a.is("--precision")) o.prm.set("precision", a.value());
    else if (a.is("--m2l")) o.prm.set("m2l", a.value());
    else if (a.is("--device")) o.device = a.value();
    else if (a.is("--min-log2n")) o.min_log2n = a.integer();
    else if (a.is("--max-log2n")) o.max_log2n = a.integer();
    else if (a.is("--repeat")) o.repeat = a.integer();
    else if (a.is("--jitter")) o.jitter = a.real();
    else if (a.is("--shift")) o.shift = a.real();
    else if (a.is("--fmm-ref")) o.fmm_ref = true;
    else if (a.is("--resident")) o.resident = true;
    else if (a.is("--split-blocks")) o.split_blocks = a.integer();
    else if (a.is("--shares")) o.shares = a.integer();
    else if (a.is("--share-gpus")) o.share_gpus = true;
    else if (a.is("--split")) o.split = a.value();
    else if (a.is("--overlap")) {
      o.overlap = a.list();
      for (const auto& m : o.overlap)
        if (m != "serial" && m != "streams" && m != "split")
          throw std::invalid_argument("--overlap " + m + ": serial, streams or split");
    }
    else if (a.is("--p")) o.prm.set("p", a.value());
    else if (a.is("--theta")) o.prm.set("theta", a.value());
    else if (a.is("--ncrit")) o.prm.set("ncrit", a.value());
    else if (a.is("--tolerance")) o.prm.set("tolerance", a.value());
    else if (a.is("--images")) o.prm.set("images", a.value());
    else if (a.is("--p2p-max-pairs")) o.prm.set("p2p_max_pairs", a.value());
    else if (a.is("--help") || a.is("-h")) {
      std::printf("usage: fmm_bench [--device cpu|gpu] [--min-log2n N] [--max-log2n N] [--p P] [--theta T] "
                  "[--ncrit N] [--tolerance E] [--images K] [--p2p-max-pairs M] [--periodic] [--lattice | --turbulent] "
                  "[--precision single|double] [--m2l lists|fft] [--direct-max-log2n N] [--ref-max-log2n N] [--jitter F] [--shift F] [--fmm-ref] [--repeat R] [--csv] "
                  "[--resident [--overlap serial,streams,split] [--split-blocks B] [--shares R]] "
                  "[--split slabs|interleaved] [--share-gpus]\n");
      std::exit(0);
    } else {
      a.unknown();
    }
  }
  if (o.device != "cpu" && o.device != "gpu") throw std::invalid_argument("--device " + o.device + ": cpu or gpu");
  o.prm.use_gpu = o.device == "gpu";
  if (o.min_log2n < 1 || o.max_log2n < o.min_log2n || o.max_log2n > 27)
    throw std::invalid_argument("bad --min/max-log2n");
  if (o.repeat < 1) throw std::invalid_argument("--repeat must be >= 1");
  if (o.resident && o.device != "gpu") throw std::invalid_argument("--resident needs --device gpu");
#ifndef VH_FMM_HAVE_CUDA
  if (o.resident) throw std::invalid_argument("--resident: this build has no CUDA");
#endif
  if (o.split_blocks < 1) throw std::invalid_argument("--split-blocks must be >= 1");
  if (o.shares < 0 || o.shares > 4096) throw std::invalid_argument("--shares must be in 0..4096");
  if (o.shares > 0 && (!o.resident || !o.prm.periodic))
    throw std::invalid_argument("--shares needs --resident and --periodic (or --turbulent)");
  if (o.split != "slabs" && o.split != "interleaved")
    throw std::invalid_argument("--split " + o.split + ": slabs or interleaved");
  o.prm.validate();
  return o;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      std::string s = line.substr(p + 2);
      return s + " (" + std::to_string(omp_get_max_threads()) + " threads)";
    }
  return "CPU (" + std::to_string(omp_get_max_threads()) + " threads)";
}

struct Row {
  int n;
  vh::fmm::Timings t;  // median total, with the stages of that run
  double err_u = -1, err_g = -1;
  double direct = -1;  // O(N^2) GPU direct sum [s], when timed
};

// Blobs of one benchmark size.
struct Blobs {
  std::vector<Vec3> x, a;
  std::vector<double> s;
};

// Exactly on the m^3 lattice, alpha = omega h^3 of a k^4 exp turbulent field (spectral curl);
// particle (i, j, k) at index (i m + j) m + k, the order of tests/fmm/spectral_reference.h.
Blobs turbulent_lattice(int m) {
  const vh::Grid g{m};
  vh::InitialFieldSpec spec;
  spec.k_p = std::max(2.0, m / 16.0);
  spec.u_prime = 1.0;
  spec.nu = 0.01;
  const vh::InitialField f = vh::make_initial_field(spec, g);
  vh::Fft3d fft(m);
  vh::VectorField w(g);
  vh::vorticity(f.u, fft, w);
  std::vector<Vec3> omega(g.points());  // in the reference's (i, j, k) order
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < m; ++k)
        for (int d = 0; d < 3; ++d) omega[(std::size_t(i) * m + j) * m + k][d] = w.c[d][g.index(i, j, k)];
  Blobs b;
  vh::fmm::testing::lattice_blobs(m, omega, b.x, b.a);
  b.s.assign(b.x.size(), 2 * M_PI / m);
  return b;
}

// The same lattice with a random solenoidal omega of flat spectrum (unit rms).
Blobs white_lattice(int m) {
  Blobs b;
  vh::fmm::testing::lattice_blobs(m, vh::fmm::testing::random_solenoidal(m, 7), b.x, b.a);
  b.s.assign(b.x.size(), 2 * M_PI / m);
  return b;
}

// Uniform random in the box, or the lattice displaced by +-0.1 h; alpha uniform, zero mean.
Blobs random_blobs(int lg, bool lattice) {
  const int n = 1 << lg;
  std::mt19937_64 gen(1234 + lg);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double L = 2 * M_PI, h = L / std::cbrt(double(n));
  Blobs b;
  b.x.resize(n);
  b.a.resize(n);
  b.s.assign(n, h);
  Vec3 mean{};
  const int m = 1 << (lg / 3);  // lattice points per side
  for (int i = 0; i < n; ++i) {
    if (lattice) {
      const int ijk[3] = {i / (m * m), (i / m) % m, i % m};
      for (int d = 0; d < 3; ++d) b.x[i][d] = (ijk[d] + 0.5 + 0.2 * (U(gen) - 0.5)) * h;
    } else {
      for (int d = 0; d < 3; ++d) b.x[i][d] = L * U(gen);
    }
    for (int d = 0; d < 3; ++d) mean[d] += (b.a[i][d] = U(gen) - 0.5) / n;
  }
  for (auto& v : b.a)
    for (int d = 0; d < 3; ++d) v[d] -= mean[d];
  return b;
}

double rel_l2(const double* a, const double* b, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Free space: relative L2 error on 1000 sampled particles against the direct sum.
void sampled_error(const Blobs& b, const std::vector<Vec3>& u, const std::vector<Mat3>& g, Row& row) {
  const int n = static_cast<int>(b.x.size()), ns = std::min(n, 1000);
  std::vector<Vec3> us(ns), ud(ns);
  std::vector<Mat3> gs(ns), gd(ns);
#pragma omp parallel for schedule(dynamic, 8)
  for (int i = 0; i < ns; ++i) {
    const int id = int((long long)i * n / ns);
    us[i] = u[id];
    gs[i] = g[id];
    ud[i] = Vec3{};
    gd[i] = Mat3{};
    vh::fmm::p2p(&b.x[id], 1, id, b.x.data(), b.a.data(), b.s.data(), n, 0, Vec3{}, true, &ud[i], &gd[i]);
  }
  row.err_u = rel_l2(us[0].data(), ud[0].data(), 3 * std::size_t(ns));
  row.err_g = rel_l2(gs[0][0].data(), gd[0][0].data(), 9 * std::size_t(ns));
}

// --turbulent: the error of u and grad at the particles (given as separate targets) against
// the smooth regularised field, which includes each blob's own contribution to grad u.  On the
// lattice the exact spectral sum; off it (--jitter) a tight FMM, theta 0.25, p 16, double, whose
// own error on the lattice is printed with --jitter 0 --fmm-ref.
void periodic_error(const Options& o, const vh::fmm::Params& prm, const Blobs& b, int lg, const std::vector<Vec3>& u,
                    const std::vector<Mat3>& g, Row& row) {
  std::vector<Vec3> ur;
  std::vector<Mat3> gr;
  if (o.jitter > 0 || o.fmm_ref) {
    vh::fmm::Params tight = prm;
    tight.p = 16;
    tight.theta = 0.25;
    tight.ncrit = 64;
    tight.tolerance = 1e-10;
    tight.precision = "double";
    vh::fmm::evaluate_at(tight, b.x, b.a, b.s, b.x, ur, gr);
    if (o.jitter == 0) {
      std::vector<Vec3> us;
      std::vector<Mat3> gs;
      vh::fmm::testing::spectral_velocity(1 << (lg / 3), b.s[0], b.a, us, gs);
      std::fprintf(stderr, "fmm_bench: the tight FMM reference against the spectral sum: u %.2e, grad u %.2e\n",
                   rel_l2(ur[0].data(), us[0].data(), 3 * ur.size()),
                   rel_l2(gr[0][0].data(), gs[0][0].data(), 9 * gr.size()));
    }
  } else {
    vh::fmm::testing::spectral_velocity(1 << (lg / 3), b.s[0], b.a, ur, gr);
  }
  row.err_u = rel_l2(u[0].data(), ur[0].data(), 3 * u.size());
  row.err_g = rel_l2(g[0][0].data(), gr[0][0].data(), 9 * g.size());
}

// The blobs of size 2^lg of the options.
Blobs make_blobs(const Options& o, int lg) {
  Blobs b = o.white       ? white_lattice(1 << (lg / 3))
            : o.turbulent ? turbulent_lattice(1 << (lg / 3))
                          : random_blobs(lg, o.lattice);
  for (auto& x : b.x)  // --shift: a translation, which leaves every particle's exact u and grad u as they were
    for (int d = 0; d < 3; ++d) x[d] += o.shift * b.s[0];
  if (o.jitter > 0) {  // as a vortex step leaves lattice particles: off the lattice, some across leaf faces
    std::mt19937_64 gen(99 + lg);
    std::uniform_real_distribution<double> U(-o.jitter, o.jitter);
    for (auto& x : b.x)
      for (int d = 0; d < 3; ++d) x[d] += U(gen) * b.s[0];
  }
  return b;
}

// Under mpirun: each blob's rank, z-slabs of equal thickness (of the box, or of the blobs' z
// range in free space) or every R-th blob (--split).
std::vector<int> owners(const Options& o, const vh::fmm::Params& prm, const Blobs& b, int R) {
  double zlo = 0, zhi = 2 * M_PI;
  if (!prm.periodic) {
    zlo = 1e300;
    zhi = -1e300;
    for (const auto& x : b.x) zlo = std::min(zlo, x[2]), zhi = std::max(zhi, x[2]);
  }
  std::vector<int> owner(b.x.size());
  for (std::size_t i = 0; i < b.x.size(); ++i) {
    const double z = prm.periodic ? vh::fmm::wrap_coordinate(b.x[i][2]) : b.x[i][2];
    owner[i] = o.split == "interleaved" ? static_cast<int>(i % R)
                                        : std::min(R - 1, static_cast<int>((z - zlo) / (zhi - zlo) * R));
  }
  return owner;
}

#ifdef VH_FMM_HAVE_CUDA
// Every rank's blobs one after the other in rank order, each rank's in index order: the sources
// every rank of the vortex solver on R GPUs passes (the gathered set).
Blobs in_rank_order(const Blobs& b, const std::vector<int>& owner) {
  std::vector<int> order(b.x.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return owner[i] < owner[j]; });
  Blobs all;
  for (int i : order) {
    all.x.push_back(b.x[i]);
    all.a.push_back(b.a[i]);
    all.s.push_back(b.s[i]);
  }
  return all;
}
#endif

// Under mpirun: one size's evaluation over the ranks (header comment).
struct RanksRow {
  int n = 0, ranks = 1;
  vh::fmm::Timings t;  // the slowest rank's (by total) in the median run
  double exchange_max = 0;
  double let_bytes_mean = 0, let_bytes_max = 0;  // sent per rank
  double let_particles_share = 0;                // max over ranks: received / (N - N_r)
  double let_bytes_share = 0;                    // max over ranks: bytes received / (56 (N - N_r))
  double imbalance_particles = 0, imbalance_work = 0;
  double m2p_per_particle = 0;
  double err_u = -1, err_g = -1;
};

// Every rank's figures of its run t (own: its particles), in rank order: the slowest rank's stages,
// the largest exchange, bytes sent (mean, max), LET shares, imbalance, work counters.
RanksRow rank_figures(const vh::fmm::Timings& t, double own, int n, const vh::Comm& comm) {
  const int R = comm.size();
  constexpr int kF = 16;
  const double mine_f[kF] = {t.total,   t.tree,      t.traverse,     t.p2m_m2m,
                             t.m2l,     t.l2l_l2p,   t.p2p,          t.exchange,
                             double(t.let_sent.bytes), double(t.let_received.particles),
                             double(t.let_received.bytes), own, double(t.n_m2p),
                             double(t.n_m2l), double(t.n_p2p_pairs), t.gpu_wall};
  std::vector<double> all(std::size_t(kF) * R);
  comm.allgather(mine_f, sizeof mine_f, all.data());
  RanksRow row;
  row.n = n;
  row.ranks = R;
  int slowest = 0;
  double work_max = 0, work_sum = 0, np_max = 0, m2p = 0, m2l = 0, pairs = 0;
  for (int r = 0; r < R; ++r) {
    const double* f = &all[std::size_t(kF) * r];
    if (f[0] > all[std::size_t(kF) * slowest]) slowest = r;
    row.exchange_max = std::max(row.exchange_max, f[7]);
    row.let_bytes_mean += f[8] / R;
    row.let_bytes_max = std::max(row.let_bytes_max, f[8]);
    const double others = n - f[11];
    if (others > 0) {
      row.let_particles_share = std::max(row.let_particles_share, f[9] / others);
      row.let_bytes_share = std::max(row.let_bytes_share, f[10] / (56 * others));
    }
    np_max = std::max(np_max, f[11]);
    work_max = std::max(work_max, f[0] - f[7]);
    work_sum += f[0] - f[7];
    m2p += f[12];
    m2l += f[13];
    pairs += f[14];
  }
  const double* f = &all[std::size_t(kF) * slowest];
  row.t = t;
  row.t.total = f[0];
  row.t.tree = f[1];
  row.t.traverse = f[2];
  row.t.p2m_m2m = f[3];
  row.t.m2l = f[4];
  row.t.l2l_l2p = f[5];
  row.t.p2p = f[6];
  row.t.exchange = f[7];
  row.t.gpu_wall = f[15];
  row.t.n_m2l = static_cast<long long>(m2l);
  row.t.n_p2p_pairs = static_cast<long long>(pairs);
  row.imbalance_particles = np_max / (double(n) / R);
  row.imbalance_work = work_max / (work_sum / R);
  row.m2p_per_particle = m2p / n;
  return row;
}

// --turbulent on the exact lattice: the error against the spectral sum can be computed.
bool spectral_reference_applies(const Options& o, int lg) {
  return o.turbulent && o.jitter == 0 && !o.fmm_ref && lg <= o.ref_max_log2n;
}

// Under mpirun, u and grad u at this rank's blobs `mine` (evaluate_at: each blob's own pair
// included, as the spectral sum has it) against the exact spectral sum, relative L2 over every
// rank's blobs, into row.err_u and row.err_g.
void spectral_error_ranks(int lg, const Blobs& b, const vh::Comm& comm, const std::vector<int>& mine,
                          const std::vector<Vec3>& u, const std::vector<Mat3>& g, RanksRow& row) {
  std::vector<Vec3> ur;
  std::vector<Mat3> gr;
  vh::fmm::testing::spectral_velocity(1 << (lg / 3), b.s[0], b.a, ur, gr);
  double num[2] = {0, 0}, den[2] = {0, 0};
  for (std::size_t k = 0; k < mine.size(); ++k)
    for (int i = 0; i < 3; ++i) {
      const Vec3& r = ur[mine[k]];
      num[0] += (u[k][i] - r[i]) * (u[k][i] - r[i]);
      den[0] += r[i] * r[i];
      for (int l = 0; l < 3; ++l) {
        const double d = g[k][i][l] - gr[mine[k]][i][l];
        num[1] += d * d;
        den[1] += gr[mine[k]][i][l] * gr[mine[k]][i][l];
      }
    }
  row.err_u = std::sqrt(comm.sum(num[0]) / comm.sum(den[0]));
  row.err_g = std::sqrt(comm.sum(num[1]) / comm.sum(den[1]));
}

RanksRow run_ranks(const Options& o, const vh::fmm::Params& prm, const Blobs& b, int lg, const vh::Comm& comm) {
  const int n = static_cast<int>(b.x.size()), R = comm.size();
  const std::vector<int> owner = owners(o, prm, b, R);
  std::vector<int> mine;
  for (int i = 0; i < n; ++i)
    if (owner[i] == comm.rank()) mine.push_back(i);
  Blobs m;
  for (int i : mine) {
    m.x.push_back(b.x[i]);
    m.a.push_back(b.a[i]);
    m.s.push_back(b.s[i]);
  }
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  vh::fmm::evaluate_self(prm, comm, m.x, m.a, m.s, u, g);  // warm-up
  std::vector<std::pair<double, vh::fmm::Timings>> runs;
  for (int r = 0; r < o.repeat; ++r) {
    const vh::fmm::Timings t = vh::fmm::evaluate_self(prm, comm, m.x, m.a, m.s, u, g);
    runs.push_back({comm.max(t.total), t});
  }
  std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.first < q.first; });
  const vh::fmm::Timings& t = runs[runs.size() / 2].second;
  RanksRow row = rank_figures(t, double(mine.size()), n, comm);
  // The error over every rank's blobs: free space against the direct sum on 1000 sampled blobs,
  // --turbulent against the exact spectral sum (evaluate_at at the blobs, as without ranks).
  double num[2] = {0, 0}, den[2] = {0, 0};
  auto add = [&](const Vec3& a, const Mat3& ga, const Vec3& r, const Mat3& gr) {
    for (int k = 0; k < 3; ++k) {
      num[0] += (a[k] - r[k]) * (a[k] - r[k]);
      den[0] += r[k] * r[k];
      for (int l = 0; l < 3; ++l) {
        num[1] += (ga[k][l] - gr[k][l]) * (ga[k][l] - gr[k][l]);
        den[1] += gr[k][l] * gr[k][l];
      }
    }
  };
  bool have_error = false;
  if (!prm.periodic) {
    have_error = true;
    const int ns = std::min(n, 1000);
    std::vector<int> local(n, -1);
    for (std::size_t k = 0; k < mine.size(); ++k) local[mine[k]] = static_cast<int>(k);
    for (int i = 0; i < ns; ++i) {
      const int id = int((long long)i * n / ns);
      if (local[id] < 0) continue;
      Vec3 ud{};
      Mat3 gd{};
      vh::fmm::p2p(&b.x[id], 1, id, b.x.data(), b.a.data(), b.s.data(), n, 0, Vec3{}, true, &ud, &gd);
      add(u[local[id]], g[local[id]], ud, gd);
    }
  } else if (spectral_reference_applies(o, lg)) {
    vh::fmm::evaluate_at(prm, comm, m.x, m.a, m.s, m.x, u, g);
    spectral_error_ranks(lg, b, comm, mine, u, g, row);
    return row;
  }
  if (have_error) {
    row.err_u = std::sqrt(comm.sum(num[0]) / comm.sum(den[0]));
    row.err_g = std::sqrt(comm.sum(num[1]) / comm.sum(den[1]));
  }
  return row;
}

#ifdef VH_FMM_HAVE_CUDA
// One row of the resident table: an overlap mode, same_positions, the median of --repeat.
struct ResidentRow {
  Row row;
  std::string overlap;
  bool same = false;
};

// A device copy of a host array of doubles, freed on destruction.
struct DeviceArray {
  double* p = nullptr;
  template <class T> explicit DeviceArray(const std::vector<T>& v) : DeviceArray(v.size() * sizeof(T) / sizeof(double)) {
    if (!v.empty() && cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("fmm_bench: upload failed");
  }
  explicit DeviceArray(std::size_t doubles) {
    if (doubles && cudaMalloc(&p, doubles * sizeof(double)) != cudaSuccess)
      throw std::runtime_error("fmm_bench: cudaMalloc of " + std::to_string(doubles * 8) + " bytes failed");
  }
  ~DeviceArray() {
    if (p) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

// evaluate_self leaves each blob's own pair out; the references hold it (G(0) eps alpha in grad
// u, nothing in u): blob i's added to its grad u by the kernel's own formula.
void add_self_pair(const Blobs& b, std::size_t i, Mat3& grad) {
  const double r0[3] = {0, 0, 0}, ai[3] = {b.a[i][0], b.a[i][1], b.a[i][2]};
  double ui[3] = {0, 0, 0}, gi[3][3] = {};
  vh::fmm::p2p_pair(r0, ai, b.s[i], ui, gi);
  for (int m = 0; m < 3; ++m)
    for (int k = 0; k < 3; ++k) grad[m][k] += gi[m][k];
}

// Under mpirun with --device gpu --resident, one GPU a rank: the vortex solver's evaluation on
// R GPUs (vortex/solver_gpu.cu). Every rank holds every blob, its share's blobs one after the
// other in rank order (the gathered sources), evaluates at its own share (GpuEvaluator::
// evaluate_own: the whole set's tree and, with --m2l fft, its uniform levels; the P2P, L2P and
// lists' M2L at this rank's leaves) and shares the upward pass (share_upward: the multipoles of
// its own blobs, one all-reduce). Figures: the slowest rank's stages, the
// all-reduce's seconds (exchange) and the bytes a rank sends in it (MB sent), the imbalance.
RanksRow run_ranks_gpu(const Options& o, const vh::fmm::Params& prm, const Blobs& b, int lg, const vh::Comm& comm) {
  const int n = static_cast<int>(b.x.size());
  const std::vector<int> owner = owners(o, prm, b, comm.size());
  const Blobs all = in_rank_order(b, owner);
  std::vector<int> mine;
  std::size_t first = 0;
  for (int i = 0; i < n; ++i) {
    if (owner[i] < comm.rank()) ++first;
    if (owner[i] == comm.rank()) mine.push_back(i);
  }
  const std::size_t m = mine.size();
  DeviceArray x(all.x), a(all.a), s(all.s), u(3 * m), g(9 * m);
  cudaStream_t stream = nullptr;
  int least = 0, greatest = 0;  // the all-reduce's stream as the vortex solver's: blocking, greatest priority
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
      cudaStreamCreateWithPriority(&stream, cudaStreamDefault, greatest) != cudaSuccess)
    throw std::runtime_error("fmm_bench: cudaStreamCreateWithPriority failed");
  RanksRow row;
  {
    vh::DeviceComm dc(comm, stream);
    vh::fmm::GpuEvaluator ev(prm);
    ev.share_upward(&dc, first, m);
    ev.evaluate_own(x.p, a.p, s.p, n, u.p, g.p);  // warm-up
    const double sent0 = dc.stats().bytes;
    std::vector<std::pair<double, vh::fmm::Timings>> runs;
    for (int r = 0; r < o.repeat; ++r) {
      comm.barrier();
      const vh::fmm::Timings tm = ev.evaluate_own(x.p, a.p, s.p, n, u.p, g.p);
      runs.push_back({comm.max(tm.total), tm});
    }
    std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.first < q.first; });
    vh::fmm::Timings tm = runs[runs.size() / 2].second;
    tm.let_sent.bytes = static_cast<long long>((dc.stats().bytes - sent0) / o.repeat);
    row = rank_figures(tm, double(m), n, comm);
  }
  cudaStreamDestroy(stream);
  if (prm.periodic && spectral_reference_applies(o, lg)) {
    std::vector<Vec3> uh(m);
    std::vector<Mat3> gh(m);
    cudaMemcpy(uh.data(), u.p, m * sizeof(Vec3), cudaMemcpyDeviceToHost);
    cudaMemcpy(gh.data(), g.p, m * sizeof(Mat3), cudaMemcpyDeviceToHost);
    for (std::size_t k = 0; k < m; ++k) add_self_pair(b, mine[k], gh[k]);
    spectral_error_ranks(lg, b, comm, mine, uh, gh, row);
  }
  return row;
}

// --shares R: each z-slab share's evaluate_own in turn on this GPU (header comment), one table
// row a share (printed) and its CSV rows.
void run_shares(const Options& o, const vh::fmm::Params& prm, const Blobs& b, vh::bench::CsvRows* csv,
                const std::string& case_base) {
  const std::size_t n = b.x.size();
  const std::vector<int> owner = owners(o, prm, b, o.shares);
  const Blobs all = in_rank_order(b, owner);
  DeviceArray x(all.x), a(all.a), s(all.s);
  std::size_t first = 0;
  for (int r = 0; r < o.shares; ++r) {
    const std::size_t m = static_cast<std::size_t>(std::count(owner.begin(), owner.end(), r));
    DeviceArray u(3 * std::max<std::size_t>(m, 1)), g(9 * std::max<std::size_t>(m, 1));
    vh::fmm::GpuEvaluator ev(prm);
    ev.share_upward(nullptr, first, m);
    ev.evaluate_own(x.p, a.p, s.p, n, u.p, g.p);  // warm-up
    std::vector<vh::fmm::Timings> runs;
    for (int k = 0; k < o.repeat; ++k) runs.push_back(ev.evaluate_own(x.p, a.p, s.p, n, u.p, g.p));
    std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.total < q.total; });
    const vh::fmm::Timings& t = runs[runs.size() / 2];
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    const double gib = double(total_b - free_b) / 1073741824.0;
    std::printf("%9zu %5d %9zu %8.4f %7.4f %8.4f %8.4f %8.4f %8.4f %8.4f %12lld %14lld %8.2f\n", n, r, m, t.total,
                t.tree, t.p2m_m2m, t.m2l, t.l2l_l2p, t.p2p, t.gpu_wall, t.n_m2l, t.n_p2p_pairs, gib);
    std::fflush(stdout);
    if (csv) {
      const std::string cs = case_base + " share=" + std::to_string(r) + "/" + std::to_string(o.shares);
      csv->row(cs, "time_per_eval", t.total, "s");
      csv->row(cs, "time_m2l", t.m2l, "s");
      csv->row(cs, "time_p2p", t.p2p, "s");
      csv->row(cs, "time_gpu_wall", t.gpu_wall, "s");
      csv->row(cs, "m2l_translations", double(t.n_m2l), "1");
      csv->row(cs, "p2p_pairs", double(t.n_p2p_pairs), "1");
      csv->row(cs, "gpu_bytes_in_use", double(total_b - free_b), "B");
    }
    first += m;
  }
}

// --resident: inputs on the device once, one evaluator for all the runs of this size.
void run_resident(const Options& o, const vh::fmm::Params& prm, const Blobs& b, int lg, std::vector<ResidentRow>& out) {
  const std::size_t n = b.x.size();
  DeviceArray x(b.x), a(b.a), s(b.s), u(3 * n), g(9 * n);
  vh::fmm::GpuEvaluator ev(prm);
  Row err{static_cast<int>(n), {}};
  if (prm.periodic && o.turbulent && lg <= o.ref_max_log2n) {
    ev.evaluate_self(x.p, a.p, s.p, n, u.p, g.p, false);
    std::vector<Vec3> uh(n);
    std::vector<Mat3> gh(n);
    cudaMemcpy(uh.data(), u.p, n * sizeof(Vec3), cudaMemcpyDeviceToHost);
    cudaMemcpy(gh.data(), g.p, n * sizeof(Mat3), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < n; ++i) add_self_pair(b, i, gh[i]);
    periodic_error(o, prm, b, lg, uh, gh, err);
  }
  for (const std::string& mode : o.overlap) {
    ev.set_overlap(mode == "serial"   ? vh::fmm::GpuEvaluator::Overlap::serial
                   : mode == "split" ? vh::fmm::GpuEvaluator::Overlap::split
                                     : vh::fmm::GpuEvaluator::Overlap::streams,
                   o.split_blocks);
    for (bool same : {false, true}) {
      ev.evaluate_self(x.p, a.p, s.p, n, u.p, g.p, same);  // warm-up
      std::vector<vh::fmm::Timings> runs;
      for (int r = 0; r < o.repeat; ++r) runs.push_back(ev.evaluate_self(x.p, a.p, s.p, n, u.p, g.p, same));
      std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.total < q.total; });
      ResidentRow rr{Row{static_cast<int>(n), runs[runs.size() / 2]}, mode, same};
      rr.row.err_u = err.err_u;
      rr.row.err_g = err.err_g;
      const auto& t = rr.row.t;
      char eu[32] = "-", eg[32] = "-";
      if (err.err_u >= 0) {
        std::snprintf(eu, sizeof eu, "%.2e", err.err_u);
        std::snprintf(eg, sizeof eg, "%.2e", err.err_g);
      }
      std::printf("%9zu %8s %5s %8.4f %7.4f %7.4f %7.4f %8.4f %8.4f %8.4f %8.4f %8.4f %9s %9s %8.0f %7.2f\n", n,
                  mode.c_str(), same ? "yes" : "no", t.total, t.upload, t.tree, t.traverse, t.p2m_m2m, t.m2l,
                  t.l2l_l2p, t.p2p, t.gpu_wall, eu, eg, double(t.n_p2p_pairs) / n, double(t.n_m2l) / n);
      std::fflush(stdout);
      out.push_back(rr);
    }
  }
}
#endif

/// The memory of the case N = 2^lg (bench/memory_check.h): the FMM's (app::fmm_memory, host and
/// GPU); the bench's positions, strengths, cores, u and ∇u (152 B a particle, on the GPU too with
/// --resident); with the spectral reference (--turbulent, --white; N ≤ 2^ref-max-log2n) its
/// full complex α̂, û and ∇û (240 B a point), its u and ∇u and the bench's copies (192 B).
/// With --resident the GpuEvaluator builds its tree and lists on the GPU and keeps nothing of
/// the FMM's on the host (measured on an H200 at 2^24: 2.49 GB peak resident, under the bench's
/// 152 B a particle), so fmm_memory's host figure (the CPU path's tree, lists and staging) is
/// not charged.
vh::app::MemoryEstimate case_memory(const Options& o, int lg) {
  const double n = std::ldexp(1.0, lg);
  const vh::app::FmmMemory f = vh::app::fmm_memory(n, o.prm, o.prm.use_gpu);
  vh::app::MemoryEstimate e;
  if (!o.resident) e.host.push_back({"FMM", f.host});
  e.host.push_back({"particles, u and grad u", 152 * n});
  if (o.turbulent && lg <= o.ref_max_log2n) e.host.push_back({"spectral reference", 432 * n});
  if (o.prm.use_gpu) e.device.push_back({"FMM", f.device});
  if (o.prm.use_gpu && o.resident) e.device.push_back({"resident inputs and results", 152 * n});
  return e;
}

}  // namespace

// The whole program under mpirun with R > 1 ranks: the table of run_ranks() rows (rank 0
// prints), and --csv rows.
int main_ranks(const Options& o, const vh::Comm& comm) {
  const auto& prm = o.prm;
  const vh::fmm::Params rp = prm.resolved();
  const bool root = comm.root();
  const char* field = o.white       ? " white-noise lattice"
                      : o.turbulent ? " turbulent lattice"
                      : o.lattice   ? " displaced lattice"
                                    : " random";
  const bool gpu = prm.use_gpu;
#ifdef VH_FMM_HAVE_CUDA
  const std::string transport = gpu ? vh::DeviceComm::name(vh::DeviceComm::configured(comm)) : "MPI";
#else
  const std::string transport = "MPI";
#endif
  if (root && gpu) {
    std::printf("fmm_bench: GPU on %d ranks, %s (%s, %s), every blob on every rank, the targets its own, "
                "upward pass shared; %s%s, p = %d, theta = %g, ncrit = %d, tolerance = %g, commit %s\n",
                comm.size(), o.share_gpus ? "GPUs shared where fewer (times contended)" : "one GPU each",
                transport.c_str(), o.split == "slabs" ? "z-slabs" : "interleaved",
                prm.periodic ? "periodic" : "free space", field, rp.p, rp.theta, rp.ncrit, prm.tolerance, VH_GIT_HASH);
    std::printf("stages: the slowest rank's (GPU stages per stream, wall: P2M ... L2P with the near field beside); "
                "exchange: the multipoles' all-reduce, the slowest rank's; MB sent a rank in it (mean, max)\n"
                "%9s %8s %7s %8s %8s %8s %8s %8s %8s %7s %7s %6s %6s %8s %7s %9s %9s\n",
                "N", "total[s]", "tree", "p2m/m2m", "m2l", "l2l/l2p", "p2p", "gpu wall", "exchange", "MB mean",
                "MB max", "imb N", "imb W", "pairs/N", "M2L/N", "err u", "err grad");
  } else if (root) {
    std::printf("fmm_bench: CPU on %d ranks (MPI, %s, %d threads a rank), %s%s, p = %d, theta = %g, ncrit = %d, "
                "tolerance = %g%s, commit %s\n",
                comm.size(), o.split == "slabs" ? "z-slabs" : "interleaved", omp_get_max_threads(),
                prm.periodic ? "periodic" : "free space", field, rp.p, rp.theta, rp.ncrit, prm.tolerance,
                prm.periodic ? (", images = " + std::to_string(prm.images)).c_str() : "", VH_GIT_HASH);
    std::printf("stages: the slowest rank's; exchange: the slowest's (boxes, LETs, roots); LET MB sent a rank "
                "(mean, max); received: the most any rank got of what the gather brings it (particles, bytes)\n"
                "%9s %8s %7s %7s %8s %8s %8s %8s %8s %7s %7s %7s %7s %6s %6s %8s %7s %7s %9s %9s\n",
                "N", "total[s]", "tree", "lists", "p2m/m2m", "m2l", "l2l/l2p", "p2p", "exchange", "MB mean",
                "MB max", "recv p", "recv B", "imb N", "imb W", "pairs/N", "M2L/N", "M2P/N", "err u", "err grad");
  }
  std::vector<RanksRow> rows;
  for (int lg = o.min_log2n; lg <= o.max_log2n; ++lg) {
    if (o.lattice && lg % 3 != 0) continue;
#ifdef VH_FMM_HAVE_CUDA
    const RanksRow r = gpu ? run_ranks_gpu(o, prm, make_blobs(o, lg), lg, comm) : run_ranks(o, prm, make_blobs(o, lg), lg, comm);
#else
    const RanksRow r = run_ranks(o, prm, make_blobs(o, lg), lg, comm);
#endif
    rows.push_back(r);
    if (!root) continue;
    char eu[32] = "-", eg[32] = "-";
    if (r.err_u >= 0) {
      std::snprintf(eu, sizeof eu, "%.2e", r.err_u);
      std::snprintf(eg, sizeof eg, "%.2e", r.err_g);
    }
    if (gpu) {
      std::printf("%9d %8.3f %7.3f %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %7.1f %7.1f %6.2f %6.2f %8.0f %7.2f %9s %9s\n",
                  r.n, r.t.total, r.t.tree, r.t.p2m_m2m, r.t.m2l, r.t.l2l_l2p, r.t.p2p, r.t.gpu_wall, r.t.exchange,
                  r.let_bytes_mean / 1e6, r.let_bytes_max / 1e6, r.imbalance_particles, r.imbalance_work,
                  double(r.t.n_p2p_pairs) / r.n, double(r.t.n_m2l) / r.n, eu, eg);
      std::fflush(stdout);
      continue;
    }
    std::printf("%9d %8.3f %7.3f %7.3f %8.4f %8.4f %8.4f %8.4f %8.4f %7.3f %7.3f %6.0f%% %6.0f%% %6.2f %6.2f %8.0f "
                "%7.2f %7.2f %9s %9s\n",
                r.n, r.t.total, r.t.tree, r.t.traverse, r.t.p2m_m2m, r.t.m2l, r.t.l2l_l2p, r.t.p2p, r.t.exchange,
                r.let_bytes_mean / 1e6, r.let_bytes_max / 1e6, 100 * r.let_particles_share, 100 * r.let_bytes_share,
                r.imbalance_particles, r.imbalance_work, double(r.t.n_p2p_pairs) / r.n, double(r.t.n_m2l) / r.n,
                r.m2p_per_particle, eu, eg);
    std::fflush(stdout);
  }
  if (o.csv && root) {
    std::fflush(stdout);
#ifdef VH_FMM_HAVE_CUDA
    // The GPUs the ranks ran on (fewer than the ranks with --share-gpus on a smaller machine).
    const int gpus = std::min(vh::fmm::gpu_count(), comm.size());
    const std::string dev = gpu ? vh::bench::gpus_device(vh::fmm::gpu_name(), gpus, comm.size())
                                : cpu_name() + " x " + std::to_string(comm.size()) + " ranks";
#else
    const std::string dev = cpu_name() + " x " + std::to_string(comm.size()) + " ranks";
#endif
    vh::bench::CsvRows csv(std::cout, "fmm", dev, VH_GIT_HASH);
    const std::string base = std::string(gpu ? "gpu resident shared upward " : "cpu ") +
                             (prm.periodic ? "periodic" : "free space") + field + " ranks=" +
                             std::to_string(comm.size()) + " transport=" + transport + " split=" + o.split;
    for (const auto& r : rows) {
      const std::string cs = base + " N=" + std::to_string(r.n) + " p=" + std::to_string(rp.p) + " theta=" +
                             std::to_string(rp.theta).substr(0, 4) + " ncrit=" + std::to_string(rp.ncrit) +
                             " tol=" + std::to_string(prm.tolerance).substr(0, 8) + " median of " +
                             std::to_string(o.repeat);
      csv.row(cs, "time_per_eval", r.t.total, "s");
      csv.row(cs, "time_exchange", r.exchange_max, "s");
      csv.row(cs, "time_lists", r.t.traverse, "s");
      csv.row(cs, "time_m2l", r.t.m2l, "s");
      csv.row(cs, "time_l2l_l2p", r.t.l2l_l2p, "s");
      csv.row(cs, "time_p2p", r.t.p2p, "s");
      csv.row(cs, gpu ? "allreduce_bytes_sent_mean" : "let_bytes_sent_mean", r.let_bytes_mean, "B");
      csv.row(cs, gpu ? "allreduce_bytes_sent_max" : "let_bytes_sent_max", r.let_bytes_max, "B");
      if (gpu) csv.row(cs, "time_gpu_wall", r.t.gpu_wall, "s");
      if (!gpu) {
        csv.row(cs, "let_particles_received_over_gather", r.let_particles_share, "1");
        csv.row(cs, "let_bytes_received_over_gather", r.let_bytes_share, "1");
      }
      csv.row(cs, "imbalance_particles_max_over_mean", r.imbalance_particles, "1");
      csv.row(cs, "imbalance_work_max_over_mean", r.imbalance_work, "1");
      csv.row(cs, "p2p_pairs_per_particle", double(r.t.n_p2p_pairs) / r.n, "1");
      csv.row(cs, "m2l_per_particle", double(r.t.n_m2l) / r.n, "1");
      if (!gpu) csv.row(cs, "m2p_per_particle", r.m2p_per_particle, "1");
      if (r.err_u >= 0) {
        csv.row(cs, "u_rel_l2_error", r.err_u, "1");
        csv.row(cs, "grad_u_rel_l2_error", r.err_g, "1");
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  vh::MpiSession mpi(&argc, &argv);
  const vh::Comm comm = vh::Comm::world();
  Options o;
  int gpu_ranks = 1;  // the ranks on this rank's GPU
  try {
    o = parse(argc, argv);
    if (comm.size() > 1 && o.prm.use_gpu && !o.resident)
      throw std::invalid_argument("under mpirun --device gpu needs --resident (the evaluator on device arrays)");
#ifdef VH_FMM_HAVE_CUDA
    if (comm.size() > 1 && o.prm.use_gpu) {
      if (!o.prm.periodic) throw std::invalid_argument("under mpirun --device gpu needs --periodic (or --turbulent)");
      gpu_ranks = vh::select_gpus(comm, o.share_gpus);
    }
#endif
    // The largest case's memory first (the others are smaller).
    vh::bench::require_memory("--max-log2n " + std::to_string(o.max_log2n), "--max-log2n", o.max_log2n,
                              vh::bench::sizes_below(o.max_log2n, 1, o.min_log2n),
                              [&](int lg) { return case_memory(o, lg); },
                              o.prm.use_gpu ? vh::Backend::gpu : vh::Backend::cpu, comm, gpu_ranks);
  } catch (const std::exception& e) {
    if (comm.root()) std::fprintf(stderr, "fmm_bench: %s\n", e.what());
    return 2;
  }
  if (comm.size() > 1) return main_ranks(o, comm);
  const auto& prm = o.prm;
  const bool gpu = prm.use_gpu;
#ifdef VH_FMM_HAVE_CUDA
  if (gpu && vh::fmm::gpu_count() == 0) {
    std::fprintf(stderr, "fmm_bench: --device gpu: no CUDA device is visible\n");
    return 1;
  }
#endif
  const vh::fmm::Params rp = prm.resolved();
  const std::string what =
      gpu ? "GPU (near field and M2L " + rp.precision + ", other far-field stages double)" : "CPU";
  const char* field = o.white       ? " white-noise lattice"
                      : o.turbulent ? " turbulent lattice"
                      : o.lattice   ? " displaced lattice"
                                    : " random";
  std::printf("fmm_bench: %s, %s%s%s, p = %d, theta = %g, ncrit = %d, tolerance = %g%s, commit %s\n", what.c_str(),
              prm.periodic ? "periodic" : "free space", field,
              o.shift != 0 ? (" shifted by " + std::to_string(o.shift).substr(0, 5) + " h").c_str() : "", rp.p,
              rp.theta, rp.ncrit, prm.tolerance, prm.periodic ? (", images = " + std::to_string(prm.images)).c_str() : "",
              VH_GIT_HASH);
#ifdef VH_FMM_HAVE_CUDA
  if (o.shares > 0) {
    std::printf("evaluate_own of each of %d z-slab shares in turn on this GPU (a rank's work on %d GPUs, the "
                "upward pass whole, no all-reduce); stage times per stream, gpu wall: P2M ... L2P with the overlap; "
                "GPU GiB in use with the share's evaluator\n%9s %5s %9s %8s %7s %8s %8s %8s %8s %8s %12s %14s %8s\n",
                o.shares, o.shares, "N", "share", "own", "total[s]", "tree", "p2m/m2m", "m2l", "l2l/l2p", "p2p",
                "gpu wall", "M2L", "P2P pairs", "GPU GiB");
    std::ostringstream rows_csv;
    vh::bench::CsvRows csv(rows_csv, "fmm", vh::fmm::gpu_name(), VH_GIT_HASH);
    for (int lg = o.min_log2n; lg <= o.max_log2n; ++lg) {
      if (o.lattice && lg % 3 != 0) continue;
      const std::string cs = std::string("gpu resident evaluate_own periodic") + field + " N=" +
                             std::to_string(1 << lg) + " p=" + std::to_string(rp.p) + " theta=" +
                             std::to_string(rp.theta).substr(0, 4) + " ncrit=" + std::to_string(rp.ncrit) +
                             " tol=" + std::to_string(prm.tolerance).substr(0, 8) + " m2l=" + rp.m2l +
                             " median of " + std::to_string(o.repeat);
      run_shares(o, prm, make_blobs(o, lg), &csv, cs);
    }
    if (o.csv) std::cout << rows_csv.str();
    return 0;
  }
#endif
  if (o.resident)
    std::printf("resident inputs (GpuEvaluator); same: same_positions; stage times per stream, gpu wall: P2M ... L2P "
                "with the overlap\n%9s %8s %5s %8s %7s %7s %7s %8s %8s %8s %8s %8s %9s %9s %8s %7s\n",
                "N", "overlap", "same", "total[s]", "check", "tree", "lists", "p2m/m2m", "m2l", "l2l/l2p", "p2p",
                "gpu wall", "err u", "err grad", "pairs/N", "M2L/N");
  else
    std::printf("%9s %8s %7s %7s %7s %8s %8s %8s %8s %9s %9s %8s %7s %8s %9s\n", "N", "total[s]", "tree", "lists",
                "upload", "p2m/m2m", "m2l", "l2l/l2p", "p2p", "err u", "err grad", "pairs/N", "M2L/N", "Gpair/s",
                "direct[s]");
  std::vector<Row> rows;
#ifdef VH_FMM_HAVE_CUDA
  std::vector<ResidentRow> resident_rows;
#endif
  for (int lg = o.min_log2n; lg <= o.max_log2n; ++lg) {
    if (o.lattice && lg % 3 != 0) continue;
    const int n = 1 << lg;
    const Blobs b = make_blobs(o, lg);
#ifdef VH_FMM_HAVE_CUDA
    if (o.resident) {
      run_resident(o, prm, b, lg, resident_rows);
      continue;
    }
#endif
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    vh::fmm::evaluate_self(prm, b.x, b.a, b.s, u, g);  // warm-up
    std::vector<vh::fmm::Timings> runs;
    for (int r = 0; r < o.repeat; ++r) runs.push_back(vh::fmm::evaluate_self(prm, b.x, b.a, b.s, u, g));
    std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.total < q.total; });
    Row row{n, runs[runs.size() / 2]};
    if (!prm.periodic) {
      sampled_error(b, u, g, row);
    } else if (o.turbulent && lg <= o.ref_max_log2n) {
      vh::fmm::evaluate_at(prm, b.x, b.a, b.s, b.x, u, g);
      periodic_error(o, prm, b, lg, u, g, row);
    }
#ifdef VH_FMM_HAVE_CUDA
    if (gpu && lg <= o.direct_max_log2n) {
      vh::fmm::direct_sum_gpu(b.x, b.a, b.s, u, g);  // warm-up (fp32)
      row.direct = 1e-3 * vh::fmm::direct_sum_gpu(b.x, b.a, b.s, u, g,
                                                   rp.precision == "double" ? vh::fmm::GpuPrecision::fp64
                                                                            : vh::fmm::GpuPrecision::fp32);
    }
#endif
    const auto& t = row.t;
    char eu[32] = "-", eg[32] = "-", dr[32] = "-";
    if (row.err_u >= 0) {
      std::snprintf(eu, sizeof eu, "%.2e", row.err_u);
      std::snprintf(eg, sizeof eg, "%.2e", row.err_g);
    }
    if (row.direct >= 0) std::snprintf(dr, sizeof dr, "%.4f", row.direct);
    std::printf("%9d %8.3f %7.3f %7.3f %7.3f %8.4f %8.4f %8.4f %8.4f %9s %9s %8.0f %7.2f %8.1f %9s\n", n, t.total,
                t.tree, t.traverse, t.upload, t.p2m_m2m, t.m2l, t.l2l_l2p, t.p2p, eu, eg, double(t.n_p2p_pairs) / n,
                double(t.n_m2l) / n, 1e-9 * double(t.n_p2p_pairs) / t.p2p, dr);
    std::fflush(stdout);
    rows.push_back(row);
  }
  // Least-squares slope of log(time) against log(N).
  auto slope_of = [&](const std::vector<Row>& rs, auto time) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
    for (const auto& r : rs) {
      const double lx = std::log(double(r.n)), ly = std::log(time(r));
      sx += lx;
      sy += ly;
      sxx += lx * lx;
      sxy += lx * ly;
      k += 1;
    }
    return k >= 2 ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : NAN;
  };
  const double slope = slope_of(rows, [](const Row& r) { return r.t.total; });
  if (!o.resident) {
    const double slope_dev =
        slope_of(rows, [](const Row& r) { return r.t.p2m_m2m + r.t.m2l + r.t.l2l_l2p + r.t.p2p; });
    std::printf("fitted slope d log t / d log N: total %.3f, %s %.3f\n", slope,
                gpu ? "GPU stages" : "stages after the lists", slope_dev);
  }
#ifdef VH_FMM_HAVE_CUDA
  // Resident: per overlap mode, the rows of same_positions = false.
  auto resident_of = [&](const std::string& mode) {
    std::vector<Row> rs;
    for (const auto& r : resident_rows)
      if (r.overlap == mode && !r.same) rs.push_back(r.row);
    return rs;
  };
  for (const std::string& mode : o.overlap)
    if (o.resident)
      std::printf("fitted slope d log t / d log N, overlap %s: total %.3f, GPU wall %.3f\n", mode.c_str(),
                  slope_of(resident_of(mode), [](const Row& r) { return r.t.total; }),
                  slope_of(resident_of(mode), [](const Row& r) { return r.t.gpu_wall; }));
#endif
  // Crossover with the direct sum: the smallest timed N where the FMM is faster.
  long long cross = -1;
  for (const auto& r : rows)
    if (r.direct >= 0 && r.t.total < r.direct) {
      cross = r.n;
      break;
    }
  if (gpu && !o.resident) {
    if (cross > 0) std::printf("FMM faster than the GPU direct sum from N = %lld on\n", cross);
    else std::printf("FMM not faster than the GPU direct sum at any timed N\n");
  }

  if (o.csv) {
    std::string dev = cpu_name();
#ifdef VH_FMM_HAVE_CUDA
    if (gpu) dev = vh::fmm::gpu_name() + " + " + dev;
#endif
    std::fflush(stdout);  // the table went through printf, the rows go through std::cout
    vh::bench::CsvRows csv(std::cout, "fmm", dev, VH_GIT_HASH);
    auto row = [&](const std::string& cs, const char* metric, double v, const char* unit) { csv.row(cs, metric, v, unit); };
    const std::string base = std::string(gpu ? "gpu " + rp.precision + " " : "cpu ") +
                             (prm.periodic ? "periodic" : "free space") + field;
    // The case's settings after its name, and the rows every evaluation has.
    auto settings = [&](int n) {
      return " N=" + std::to_string(n) + " p=" + std::to_string(rp.p) + " theta=" +
             std::to_string(rp.theta).substr(0, 4) + " ncrit=" + std::to_string(rp.ncrit) +
             " tol=" + std::to_string(prm.tolerance).substr(0, 8) + " sigma=h" +
             (o.jitter > 0 ? " jitter=" + std::to_string(o.jitter).substr(0, 5) + "h" : "") +
             (o.shift != 0 ? " shift=" + std::to_string(o.shift).substr(0, 5) + "h" : "") +
             (prm.m2l != "lists" ? " m2l=" + prm.m2l : "") + " median of " +
             std::to_string(o.repeat);
    };
    auto stage_rows = [&](const std::string& cs, const Row& r) {
      row(cs, "time_per_eval", r.t.total, "s");
      row(cs, "time_tree", r.t.tree, "s");
      row(cs, "time_lists", r.t.traverse, "s");
      row(cs, "time_p2m_m2m", r.t.p2m_m2m, "s");
      row(cs, "time_m2l", r.t.m2l, "s");
      row(cs, "time_l2l_l2p", r.t.l2l_l2p, "s");
      row(cs, "time_p2p", r.t.p2p, "s");
      row(cs, "m2l_per_particle", double(r.t.n_m2l) / r.n, "1");
      if (r.err_u >= 0) {
        row(cs, "u_rel_l2_error", r.err_u, "1");
        row(cs, "grad_u_rel_l2_error", r.err_g, "1");
      }
    };
    for (const auto& r : rows) {
      const std::string cs = base + settings(r.n);
      stage_rows(cs, r);
      row(cs, "time_upload", r.t.upload, "s");
      row(cs, "p2p_pairs_per_s", double(r.t.n_p2p_pairs) / r.t.p2p, "1/s");
      if (r.direct >= 0) row(cs, "time_direct_sum_gpu", r.direct, "s");
    }
    if (rows.size() >= 2)
      row(base + " N=2^" + std::to_string(o.min_log2n) + "..2^" + std::to_string(o.max_log2n) + " p=" +
              std::to_string(prm.p),
          "time_slope_vs_n", slope, "1");
#ifdef VH_FMM_HAVE_CUDA
    for (const auto& rr : resident_rows) {
      const Row& r = rr.row;
      const std::string cs =
          base + " resident overlap=" + rr.overlap + " same_positions=" + (rr.same ? "1" : "0") + settings(r.n);
      stage_rows(cs, r);
      row(cs, "time_check", r.t.upload, "s");
      row(cs, "time_gpu_wall", r.t.gpu_wall, "s");
      row(cs, "p2p_pairs_per_particle", double(r.t.n_p2p_pairs) / r.n, "1");
    }
    if (o.resident)
      for (const std::string& mode : o.overlap) {
        const std::vector<Row> rs = resident_of(mode);
        if (rs.size() >= 2)
          row(base + " resident overlap=" + mode + " same_positions=0 N=2^" + std::to_string(o.min_log2n) + "..2^" +
                  std::to_string(o.max_log2n) + " p=" + std::to_string(rp.p),
              "time_slope_vs_n", slope_of(rs, [](const Row& r) { return r.t.total; }), "1");
      }
#endif
  }
  return 0;
}

#include "vortex/halo.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "vortex/blobs.h"
#include "vortex/blobs_kernel.h"

namespace vh::vortex {
namespace {

int wrapped(int i, int n) { return ((i % n) + n) % n; }

}  // namespace

int owner_of(const Slab& lattice, double z) {
  const int n = lattice.grid.n;
  const int plane = wrapped(int(std::lround(z / lattice.grid.h())), n);
  return block_owner(n, lattice.ranks(), plane);
}

bool owns_any(const Slab& lattice, double zlo, double zhi) {
  // The nearest planes of zlo and zhi bound those of the heights between (lround is monotone);
  // this rank's planes [z0, z0 + nz) and their image one period up against them, unwrapped.
  const int n = lattice.grid.n;
  const double h = lattice.grid.h();
  const long p0 = std::lround(zlo / h), p1 = std::lround(zhi / h);
  if (p1 - p0 + 1 >= n) return true;
  const long first = ((p0 % n) + n) % n, last = first + (p1 - p0);
  auto meets = [&](long a, long b) { return first < b && a <= last; };  // [a, b) and [first, last]
  return meets(lattice.z0, lattice.z0 + lattice.nz) || meets(lattice.z0 + n, lattice.z0 + lattice.nz + n);
}

Halo::Halo(const Slab& lattice, const std::vector<Vec3>& x, const std::vector<double>& sigma, double cutoff)
    : comm_(lattice.comm), total_(x.size()) {
  const int R = lattice.ranks();
  if (R == 1) return;
  VH_CHECK(sigma.size() == x.size(), "Halo: x and sigma differ in size");
  const int n = lattice.grid.n;
  const double h = lattice.grid.h();
  std::vector<std::vector<std::size_t>> to(static_cast<std::size_t>(R));
  std::vector<long long> last(static_cast<std::size_t>(R), -1);
  for (std::size_t q = 0; q < x.size(); ++q) {
    // The stencil's planes (blobs.cpp: stencil_points of the particle's own core covers its
    // cut-off) and the ranks that hold them, each once.
    const int m = stencil_points(sigma[q], h, cutoff);
    const int lo = blob::stencil_start(x[q][2], blob::core(sigma[q], cutoff).R, h);
    const int planes = m < n ? m : n;
    for (int z = lo; z < lo + planes; ++z) {
      const int r = block_owner(n, R, wrapped(z, n));
      if (last[std::size_t(r)] == (long long)q) continue;
      last[std::size_t(r)] = (long long)q;
      to[std::size_t(r)].push_back(q);
    }
  }
  send_counts_.resize(std::size_t(R));
  for (int r = 0; r < R; ++r) {
    send_counts_[std::size_t(r)] = to[std::size_t(r)].size();
    send_index_.insert(send_index_.end(), to[std::size_t(r)].begin(), to[std::size_t(r)].end());
    if (r != comm_.rank()) sent_ += to[std::size_t(r)].size();
  }
  send_displs_ = displacements(send_counts_);
  recv_counts_ = comm_.alltoall_counts(send_counts_);
  recv_displs_ = displacements(recv_counts_);
  for (int r = 0; r < R; ++r)
    if (r != comm_.rank()) received_ += recv_counts_[std::size_t(r)];
}

void Halo::exchange(const void* v, std::size_t elem_bytes, void* out) const {
  std::vector<char> send(send_index_.size() * elem_bytes);
  const char* src = static_cast<const char*>(v);
  for (std::size_t i = 0; i < send_index_.size(); ++i)
    std::memcpy(&send[i * elem_bytes], src + send_index_[i] * elem_bytes, elem_bytes);
  comm_.alltoallv(send.data(), send_counts_, send_displs_, out, recv_counts_, recv_displs_, elem_bytes);
}

std::size_t migrate(const Slab& lattice, Particles& p, const std::vector<std::vector<Vec3>*>& carried) {
  const Comm& comm = lattice.comm;
  const int R = lattice.ranks(), me = comm.rank();
  if (R == 1) return 0;
  // Rows of doubles: x, alpha, gamma, sigma, then each non-empty carried array.
  std::vector<std::vector<Vec3>*> vecs = {&p.x, &p.alpha, &p.gamma};
  for (auto* c : carried)
    if (c && !c->empty()) {
      VH_CHECK(c->size() == p.size(), "migrate: a carried array differs in size from the particles");
      vecs.push_back(c);
    }
  const std::size_t row = 3 * vecs.size() + 1;
  std::vector<std::vector<std::size_t>> to(static_cast<std::size_t>(R));
  for (std::size_t q = 0; q < p.size(); ++q) to[std::size_t(owner_of(lattice, p.x[q][2]))].push_back(q);
  std::vector<std::size_t> counts(static_cast<std::size_t>(R)), order;
  for (int r = 0; r < R; ++r) {
    counts[std::size_t(r)] = r == me ? 0 : to[std::size_t(r)].size();
    if (r != me) order.insert(order.end(), to[std::size_t(r)].begin(), to[std::size_t(r)].end());
  }
  std::vector<double> send(order.size() * row);
  for (std::size_t i = 0; i < order.size(); ++i) {
    double* dst = &send[i * row];
    for (auto* v : vecs) {
      const Vec3& a = (*v)[order[i]];
      *dst++ = a[0], *dst++ = a[1], *dst++ = a[2];
    }
    *dst = p.sigma[order[i]];
  }
  const std::vector<std::size_t> displs = displacements(counts), rcounts = comm.alltoall_counts(counts),
                                 rdispls = displacements(rcounts);
  const std::size_t arrivals = rdispls.back() + rcounts.back();
  std::vector<double> recv(arrivals * row);
  comm.alltoallv(send.data(), counts, displs, recv.data(), rcounts, rdispls, row * sizeof(double));
  // Keep ours in order, then append the arrivals in rank order.
  const std::vector<std::size_t>& stay = to[std::size_t(me)];
  for (auto* v : vecs) {
    std::vector<Vec3> kept(stay.size());
    for (std::size_t i = 0; i < stay.size(); ++i) kept[i] = (*v)[stay[i]];
    *v = std::move(kept);
  }
  std::vector<double> sig(stay.size());
  for (std::size_t i = 0; i < stay.size(); ++i) sig[i] = p.sigma[stay[i]];
  p.sigma = std::move(sig);
  for (std::size_t i = 0; i < arrivals; ++i) {
    const double* src = &recv[i * row];
    for (auto* v : vecs) {
      v->push_back(Vec3{src[0], src[1], src[2]});
      src += 3;
    }
    p.sigma.push_back(*src);
  }
  return order.size();
}

}  // namespace vh::vortex

// The GPU solver on R > 1 ranks (included by gpu_solver.cu, inside its anonymous namespace,
// after the kernels it reuses): one evaluation in the pass structure of slab_kernel.h, the
// device twin of slab_passes.cpp kernel by kernel, in one of two forms:
//   fused  the fused cuFFTDx passes (fused.h) on the rank's part (FusedLayout: ZI and ZFP
//          over its kept ky block, YI, XC and YF over its planes); zb → zt and back move as
//          pieces, field by field, from and into the passes' own buffers (FusedLayout's zt
//          groups the ky by owner for that): no packing, no message buffers. Where the
//          fused passes run (sizes with kernels, sm_90).
//   lines  cuFFT batched line transforms over slab_kernel.h's layouts, one plan per pass,
//          and the per-element functions of slab_kernel.h as flat kernels, the messages
//          packed in slab_kernel.h's order and moved by one all-to-all: elsewhere, or with
//          Params::transforms = cufft.
// max|u| always runs as lines on the N grid (3 fields, inverse only). Both go through
// base/device_comm.h's DeviceComm (NCCL, or MPI: CUDA-aware or staged through host memory;
// the fused pieces by peer copies where the ranks share a node). The fused form overlaps its
// exchanges with its passes by chunks of planes (overlapped_transforms). Not done yet: the
// overlap of the lines form, cuFFT callbacks and the pruned cuFFT path on R > 1 ranks
// (Params::fft_callbacks and pruned_transforms are ignored there). The diagnostics run on the
// state's slab on each GPU (core/diagnostics.h statistics_device over a slab).
// VH_FUSED_PROFILE=1 times the exchanges' phases per rank (SlabProfile).
// Included inside gpu_solver.cu's namespace: base/device_buffer.h, base/device_comm.h and
// spectral/slab_kernel.h come from there.
#pragma once

using kernel::SlabLayout;

/// Grid-stride loop bounds of the flat kernels below (64-bit: 6 · (M³/R)/2 complex values
/// exceed 2³² at 1024³ with the 3/2 rule).
__device__ inline unsigned long long flat_first() { return blockIdx.x * (unsigned long long)kFlat + threadIdx.x; }
__device__ inline unsigned long long flat_stride() { return (unsigned long long)gridDim.x * kFlat; }
unsigned flat_blocks(std::size_t n) { return blocks_for(static_cast<long long>(n), kFlat, 1 << 20); }

/// load and post (slab_kernel.h): over (j, kx, z) of the z lines.
template <class T>
__global__ void __launch_bounds__(kFlat) slab_load_kernel(SlabLayout l, int fields, StageArrays<T> arr, Cx<T>* Z) {
  const unsigned long long n = (unsigned long long)l.njy * l.nx * l.g.m;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int z = int(i % l.g.m), kx = int(i / l.g.m % l.nx), j = int(i / l.g.m / l.nx);
    kernel::load_z(l, fields, j, kx, z, arr, Z);
  }
}
template <class T>
__global__ void __launch_bounds__(kFlat)
    slab_post_kernel(SlabLayout l, int s, bool expl, T nu, T dt, StageArrays<T> arr, Cx<T>* Z) {
  const unsigned long long n = (unsigned long long)l.njy * l.nx * l.g.m;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int z = int(i % l.g.m), kx = int(i / l.g.m % l.nx), j = int(i / l.g.m / l.nx);
    kernel::post_z(l, s, expl, nu, dt, j, kx, z, arr, Z);
  }
}

/// Lines, z side of an exchange over (f, j, kx, z): Z lines to the message buffer (`to_msg`)
/// or back.
template <class T>
__global__ void __launch_bounds__(kFlat) z_side_kernel(SlabLayout l, int fields, bool to_msg, Cx<T>* Z, Cx<T>* msg) {
  const int m = l.g.m;
  const unsigned long long n = (unsigned long long)fields * l.njy * l.nx * m;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int z = int(i % m);
    unsigned long long r = i / m;
    const int kx = int(r % l.nx);
    r /= l.nx;
    const int j = int(r % l.njy), f = int(r / l.njy);
    const std::size_t b = l.zi(f, j, kx, z), q = l.z_message(fields, f, j, kx, z);
    if (to_msg)
      msg[q] = Z[b];
    else
      Z[b] = msg[q];
  }
}

/// Lines, y side: the received messages to Y (zero for |ky| > K), over (f, zl, kx, y).
template <class T>
__global__ void __launch_bounds__(kFlat) message_to_y_kernel(SlabLayout l, int fields, const Cx<T>* msg, Cx<T>* Y) {
  const int m = l.g.m;
  const unsigned long long n = (unsigned long long)fields * l.nzl * l.nx * m;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int y = int(i % m);
    unsigned long long r = i / m;
    const int kx = int(r % l.nx);
    r /= l.nx;
    const int zl = int(r % l.nzl), f = int(r / l.nzl);
    Y[i] = kernel::y_from_message(l, fields, f, zl, kx, y, msg);
  }
}

/// Lines, y side of the exchange back over (f, zl, jy, kx): the kept ky of Y to the message
/// buffer.
template <class T>
__global__ void __launch_bounds__(kFlat) y_to_message_kernel(SlabLayout l, int fields, const Cx<T>* Y, Cx<T>* msg) {
  const unsigned long long n = (unsigned long long)fields * l.nzl * l.nk * l.nx;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int kx = int(i % l.nx);
    unsigned long long r = i / l.nx;
    const int jy = int(r % l.nk);
    r /= l.nk;
    const int zl = int(r % l.nzl), f = int(r / l.nzl);
    msg[l.y_message(fields, f, jy, kx, zl)] = Y[l.yi(f, zl, kx, kernel::axis_index(jy - l.k, l.g.m))];
  }
}

/// XC's rows from Y (kx ≤ K, zero above), over (f, zl, y, kx) with kx = 0 … M/2.
template <class T>
__global__ void __launch_bounds__(kFlat) rows_from_y_kernel(SlabLayout l, int fields, const Cx<T>* Y, Cx<T>* X) {
  const int m = l.g.m, mxh = l.g.mxh();
  const unsigned long long n = (unsigned long long)fields * l.nzl * m * mxh;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int kx = int(i % mxh);
    unsigned long long r = i / mxh;
    const int y = int(r % m);
    r /= m;
    const int zl = int(r % l.nzl), f = int(r / l.nzl);
    X[i] = kernel::x_from_y(l, f, zl, y, kx, Y);
  }
}

/// YF's input: the products' kx ≤ K from XC's rows, over (c, zl, kx, y).
template <class T>
__global__ void __launch_bounds__(kFlat) y_from_rows_kernel(SlabLayout l, const Cx<T>* X, Cx<T>* Y) {
  const int m = l.g.m;
  const unsigned long long n = 3ull * l.nzl * l.nx * m;
  for (unsigned long long i = flat_first(); i < n; i += flat_stride()) {
    const int y = int(i % m);
    unsigned long long r = i / m;
    const int kx = int(r % l.nx);
    r /= l.nx;
    const int zl = int(r % l.nzl), c = int(r / l.nzl);
    Y[i] = X[l.xi(c, zl, y, kx)];
  }
}

/// VH_FUSED_PROFILE=1: the phases of the slab exchanges timed with CUDA events on the stream
/// (synchronising), per rank, totals at the solver's end (beside fused.cu's pass times).
class SlabProfile {
 public:
  enum Phase { pack_planes, transfer_planes, unpack_planes, pack_columns, transfer_columns, unpack_columns, kPhases };
  SlabProfile(cudaStream_t st, int rank) : st_(st), rank_(rank) {
    if (!on_) return;
    VH_CHECK_CUDA(cudaEventCreate(&e0_));
    VH_CHECK_CUDA(cudaEventCreate(&e1_));
  }
  ~SlabProfile() {
    if (!on_) return;
    const char* names[kPhases] = {"pack to planes", "transfer to planes", "unpack to planes",
                                  "pack to columns", "transfer to columns", "unpack to columns"};
    for (int i = 0; i < kPhases; ++i)
      if (count_[i])
        std::fprintf(stderr, "slab profile rank %d: %-20s %6ld calls %9.3f ms/call\n", rank_, names[i], count_[i],
                     ms_[i] / count_[i]);
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
  }
  SlabProfile(const SlabProfile&) = delete;
  SlabProfile& operator=(const SlabProfile&) = delete;
  /// Runs f() and books the stream time it takes to phase p.
  template <class F> void time(Phase p, F&& f) {
    if (!on_) return f();
    VH_CHECK_CUDA(cudaEventRecord(e0_, st_));
    f();
    VH_CHECK_CUDA(cudaEventRecord(e1_, st_));
    VH_CHECK_CUDA(cudaEventSynchronize(e1_));
    float ms = 0;
    VH_CHECK_CUDA(cudaEventElapsedTime(&ms, e0_, e1_));
    ms_[p] += ms;
    ++count_[p];
  }

 private:
  bool on_ = std::getenv("VH_FUSED_PROFILE") != nullptr;
  cudaStream_t st_;
  int rank_;
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
  double ms_[kPhases] = {};
  long count_[kPhases] = {};
};

/// One rank's part of the GPU solver's evaluations and of max|u| (the header comment).
template <class T>
class GpuSlab {
 public:
  /// chunks: overlapped_transforms() in that many chunks of planes (0: by size; 1: not
  /// overlapped) where the passes are fused and the exchange stream-ordered (NCCL, peer copies).
  GpuSlab(const Geometry& g, const Slab& s, bool fused, int chunks, cudaStream_t st)
      : slab_(s), st_(st), fused_(fused), comm_(s.comm, st), prof_(st, s.comm.rank()) {
    eval_.l = SlabLayout::make(g, s);
    eval_.fields = 6;
    Geometry gn = g;
    gn.m = g.n;
    maxu_.l = SlabLayout::make(gn, s);
    maxu_.fields = 3;
    const SlabLayout& l = eval_.l;
    fl_ = kernel::FusedLayout::make(g, l.jy0, l.njy, l.nzl, l.slots, false, l.ranks);
    VH_CHECK(!fused_ || std::size_t(l.nzl) * l.g.m % 4 == 0, "fused slab passes: rows per rank not a multiple of 4");
    std::size_t msg = 0;  // elements of the largest message buffer (the lines' exchanges)
    for (const Lines* L : {&eval_, &maxu_})
      if (L == &maxu_ || !fused_)
        msg = std::max({msg, L->l.z_size(L->fields), std::size_t(L->fields) * L->l.nk * L->l.nx * L->l.nzl,
                        std::size_t(1)});
    std::size_t n1 = maxu_.l.z_size(3), n2 = maxu_.l.y_size(3), n3 = maxu_.l.x_size(3);
    if (fused_) {
      n1 = std::max(n1, fl_.zb_size()), n2 = std::max(n2, fl_.zt_size()), n3 = std::max(n3, fl_.yb_size());
    } else {
      n1 = std::max(n1, l.z_size(6)), n2 = std::max(n2, l.y_size(6)), n3 = std::max(n3, l.x_size(6));
    }
    // Lines: the rows X are free during the exchanges, so they hold the device message
    // buffers where they are large enough (3/2 and 2/3: 0.44 of X each); this saves a third
    // of the rank's memory at 512³ 3/2.
    const bool msg_in_rows = !fused_ && n3 >= 2 * msg;
    const std::size_t sizes[3] = {n1, n2, n3};
    for (int i = 0; i < 3; ++i) {
      mem_[i].resize(std::max<std::size_t>(sizes[i], 1));
      mem_[i].zero(st_);  // zb/zt pads stay zero
    }
    b1_ = mem_[0].data(), b2_ = mem_[1].data(), b3_ = mem_[2].data();
    if (!msg_in_rows) msg_.resize(2 * msg);
    send_ = msg_in_rows ? b3_ : msg_.data();
    recv_ = send_ + msg;
    std::size_t ws = 256;
    make_plans(maxu_, ws);
    if (!fused_) make_plans(eval_, ws);
    ws_.resize(ws);
    for (cufftHandle h : plans_) VH_CHECK_CUFFT(cufftSetWorkArea(h, ws_.data()));
    if (fused_) {
      // The passes' own buffers receive the pieces: windows for peer copies where they run.
      comm_.share(b1_, mem_[0].size() * sizeof(Cx<T>));
      comm_.share(b2_, mem_[1].size() * sizeof(Cx<T>));
      make_pieces(chunks);
    }
    overlap_ = fused_ && comm_.stream_ordered() && planes_by_chunk_.size() > 1 &&
               std::getenv("VH_FUSED_PROFILE") == nullptr;
    if (overlap_) {
      VH_CHECK_CUDA(cudaStreamCreate(&cs_));
      VH_CHECK_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
      chunk_.resize(planes_by_chunk_.size());
      for (cudaEvent_t& e : chunk_) VH_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
  }
  ~GpuSlab() {
    for (cufftHandle h : plans_) cufftDestroy(h);
    if (!overlap_) return;
    cudaStreamSynchronize(cs_);
    cudaEventDestroy(ready_);
    for (cudaEvent_t e : chunk_) cudaEventDestroy(e);
    cudaStreamDestroy(cs_);
  }
  /// Whether the exchanges overlap the y passes (overlapped_transforms()).
  bool overlapped() const { return overlap_; }
  GpuSlab(const GpuSlab&) = delete;
  GpuSlab& operator=(const GpuSlab&) = delete;

  bool fused() const { return fused_; }
  /// How the exchanges travel (DeviceComm::describe).
  std::string transport() const { return comm_.describe(); }
  const ExchangeStats& stats() const { return comm_.stats(); }

  /// The first stage input: ZI (fused), or load into the z lines.
  void load(const StageArrays<T>& arr) {
    if (fused_) return pass(fused::Pass::z_inverse, kernel::kRhsOnly, 0, 0, arr);
    launch_flat(slab_load_kernel<T>, std::size_t(eval_.l.njy) * eval_.l.nx * eval_.l.g.m, eval_.l, 6, arr, b1_);
  }

  /// Everything between the stage input and post (collective).
  void transforms() {
    const SlabLayout& l = eval_.l;
    if (fused_ && overlap_) return overlapped_transforms();
    if (fused_) {
      exchange_to_planes(eval_);
      for (fused::Pass p : {fused::Pass::y_inverse, fused::Pass::x_cross, fused::Pass::y_forward})
        pass(p, kernel::kRhsOnly, 0, 0, StageArrays<T>{});
      exchange_to_columns(eval_);
      return;
    }
    exec_c2c(eval_.zi, b1_, CUFFT_INVERSE);
    exchange_to_planes(eval_);
    exec_c2c(eval_.yi, b2_, CUFFT_INVERSE);
    to_rows(eval_, 6);
    const std::size_t pairs = std::size_t(l.nzl) * l.g.m * l.g.mxh();  // complex (real pairs) per field
    VH_CHECK(pairs < (std::size_t(1) << 32), "slab passes: rows of one field exceed 2^32 values");
    cross_kernel<T><<<blocks_for(pairs, kFlat), kFlat, 0, st_>>>(unsigned(pairs),
                                                                    reinterpret_cast<typename Vec2<T>::type*>(b3_));
    VH_CHECK_LAUNCH();
    if (eval_.xf) VH_CHECK_CUFFT(CufftTypes<T>::fwd(eval_.xf, reinterpret_cast<T*>(b3_)));
    launch_flat(y_from_rows_kernel<T>, 3 * std::size_t(l.nzl) * l.nx * l.g.m, l, b3_, b2_);
    exec_c2c(eval_.yf, b2_, CUFFT_FORWARD);
    exchange_to_columns(eval_);
    exec_c2c(eval_.zf, b1_, CUFFT_FORWARD);
  }

  /// post of stage s (fused: ZFP) after transforms().
  void post(int s, bool expl, T nu, T dt, const StageArrays<T>& arr) {
    if (fused_) return pass(fused::Pass::z_forward_post, s, nu, dt, arr, expl);
    launch_flat(slab_post_kernel<T>, std::size_t(eval_.l.njy) * eval_.l.nx * eval_.l.g.m, eval_.l, s, expl, nu, dt,
                arr, b1_);
  }

  /// max |u_i| over the N³ points (collective); `dmax` one device T.
  double max_velocity(const StageArrays<T>& arr, T* dmax) {
    const SlabLayout& l = maxu_.l;
    const int n = l.g.m, row = l.g.mrow();
    launch_flat(slab_load_kernel<T>, std::size_t(l.njy) * l.nx * n, l, 3, arr, b1_);
    exec_c2c(maxu_.zi, b1_, CUFFT_INVERSE);
    exchange_to_planes(maxu_);
    exec_c2c(maxu_.yi, b2_, CUFFT_INVERSE);
    to_rows(maxu_, 3);
    VH_CHECK_CUDA(cudaMemsetAsync(dmax, 0, sizeof(T), st_));
    max_kernel<T><<<grid_for(n, n, l.nzl), dim3(kBx, kBy), 0, st_>>>(
        n, row, (long long)l.nzl * n * row, reinterpret_cast<const T*>(b3_), dmax);
    VH_CHECK_LAUNCH();
    T mx = 0;
    VH_CHECK_CUDA(cudaMemcpyAsync(&mx, dmax, sizeof(T), cudaMemcpyDeviceToHost, st_));
    VH_CHECK_CUDA(cudaStreamSynchronize(st_));
    return slab_.comm.max(double(mx));
  }

  /// The local passes of one evaluation without the exchanges (Solver::time_transforms).
  void local_passes(const StageArrays<T>& arr) {
    if (fused_) {
      for (fused::Pass p : {fused::Pass::y_inverse, fused::Pass::x_cross, fused::Pass::y_forward})
        pass(p, kernel::kRhsOnly, 0, 0, arr);
      return;
    }
    exec_c2c(eval_.zi, b1_, CUFFT_INVERSE);
    exec_c2c(eval_.yi, b2_, CUFFT_INVERSE);
    if (eval_.xi) VH_CHECK_CUFFT(CufftTypes<T>::inv(eval_.xi, reinterpret_cast<T*>(b3_)));
    if (eval_.xf) VH_CHECK_CUFFT(CufftTypes<T>::fwd(eval_.xf, reinterpret_cast<T*>(b3_)));
    exec_c2c(eval_.yf, b2_, CUFFT_FORWARD);
    exec_c2c(eval_.zf, b1_, CUFFT_FORWARD);
  }

 private:
  /// cuFFT plans of one transform size on b1 (z lines), b2 (y lines), b3 (x rows).
  struct Lines {
    SlabLayout l;
    int fields = 6;
    cufftHandle zi = 0, zf = 0, yi = 0, yf = 0, xi = 0, xf = 0;  // 0: none (no lines on this rank)
  };

  template <class K, class... A>
  void launch_flat(K kernel, std::size_t n, A... args) {
    if (n == 0) return;
    kernel<<<flat_blocks(n), kFlat, 0, st_>>>(args...);
    VH_CHECK_LAUNCH();
  }

  void exec_c2c(cufftHandle h, Cx<T>* d, int dir) {
    if (h) VH_CHECK_CUFFT(CufftTypes<T>::c2c_exec(h, d, dir));
  }

  void pass(fused::Pass p, int s, T nu, T dt, const StageArrays<T>& arr, bool expl = false, fused::Part part = {}) {
    fused::launch<T>(p, fl_, s, expl, nu, dt, arr, b1_, b2_, b3_, st_, part);
  }

  cufftHandle lines(long long m, long long howmany, cufftType type, std::size_t& ws) {
    if (howmany == 0) return 0;
    long long n[1] = {m};
    std::size_t w = 0;
    const cufftHandle h = plan_layout(1, n, n, 1, m, n, 1, m, type, howmany, st_, w);
    plans_.push_back(h);
    ws = std::max(ws, w);
    return h;
  }
  cufftHandle rows(long long m, long long howmany, bool inverse, std::size_t& ws) {
    long long n[1] = {m}, ec[1] = {m / 2 + 1}, er[1] = {2 * (m / 2 + 1)};
    std::size_t w = 0;
    const cufftHandle h = inverse ? plan_layout(1, n, ec, 1, ec[0], er, 1, er[0], CufftTypes<T>::c2r, howmany, st_, w)
                                  : plan_layout(1, n, er, 1, er[0], ec, 1, ec[0], CufftTypes<T>::r2c, howmany, st_, w);
    plans_.push_back(h);
    ws = std::max(ws, w);
    return h;
  }
  void make_plans(Lines& L, std::size_t& ws) {
    const SlabLayout& l = L.l;
    const long long m = l.g.m, F = L.fields;
    const cufftType c2c = CufftTypes<T>::c2c;
    L.zi = lines(m, F * l.njy * l.nx, c2c, ws);
    L.yi = lines(m, F * l.nzl * l.nx, c2c, ws);
    L.xi = rows(m, F * l.nzl * m, true, ws);
    if (F == 3) return;  // max|u|: inverse only
    L.zf = lines(m, 3 * l.njy * l.nx, c2c, ws);
    L.yf = lines(m, 3 * l.nzl * l.nx, c2c, ws);
    L.xf = rows(m, 3 * l.nzl * m, false, ws);
  }

  void to_rows(const Lines& L, int fields) {
    const SlabLayout& l = L.l;
    launch_flat(rows_from_y_kernel<T>, std::size_t(fields) * l.nzl * l.g.m * l.g.mxh(), l, fields, b2_, b3_);
    if (L.xi) VH_CHECK_CUFFT(CufftTypes<T>::inv(L.xi, reinterpret_cast<T*>(b3_)));
  }

  /// Z → Y: the z lines (or zb) of the rank's kept ky to every rank's planes.
  void exchange_to_planes(const Lines& L) {
    if (fused_ && &L == &eval_) {
      prof_.time(SlabProfile::transfer_planes, [&] { comm_.exchange(to_planes_); });
      return;
    }
    const SlabLayout& l = L.l;
    const int F = L.fields;
    prof_.time(SlabProfile::pack_planes, [&] {
      launch_flat(z_side_kernel<T>, std::size_t(F) * l.njy * l.nx * l.g.m, l, F, true, b1_, send_);
    });
    std::vector<std::size_t> sc, so, rc, ro;
    for (int r = 0; r < l.ranks; ++r) {
      sc.push_back(l.z_count(F, r)), so.push_back(l.z_offset(F, r));
      rc.push_back(l.y_count(F, r)), ro.push_back(l.y_offset(F, r));
    }
    prof_.time(SlabProfile::transfer_planes, [&] { comm_.alltoallv(send_, sc, so, recv_, rc, ro, sizeof(Cx<T>)); });
    prof_.time(SlabProfile::unpack_planes, [&] {
      launch_flat(message_to_y_kernel<T>, std::size_t(F) * l.nzl * l.nx * l.g.m, l, F, recv_, b2_);
    });
  }

  /// Y → Z: the products' kept ky of the rank's planes back to the ranks that hold them.
  void exchange_to_columns(const Lines& L) {
    if (fused_) {
      prof_.time(SlabProfile::transfer_columns, [&] { comm_.exchange(to_columns_); });
      return;
    }
    const SlabLayout& l = L.l;
    const int F = 3;
    prof_.time(SlabProfile::pack_columns, [&] {
      launch_flat(y_to_message_kernel<T>, std::size_t(F) * l.nzl * l.nk * l.nx, l, F, b2_, send_);
    });
    std::vector<std::size_t> sc, so, rc, ro;
    for (int r = 0; r < l.ranks; ++r) {
      sc.push_back(l.y_count(F, r)), so.push_back(l.y_offset(F, r));
      rc.push_back(l.z_count(F, r)), ro.push_back(l.z_offset(F, r));
    }
    prof_.time(SlabProfile::transfer_columns, [&] { comm_.alltoallv(send_, sc, so, recv_, rc, ro, sizeof(Cx<T>)); });
    prof_.time(SlabProfile::unpack_columns, [&] {
      launch_flat(z_side_kernel<T>, std::size_t(F) * l.njy * l.nx * l.g.m, l, F, false, b1_, recv_);
    });
  }

  /// Fused, with a stream-ordered exchange (NCCL or peer copies): the rank's planes in chunks,
  /// a pipeline. The exchange stream moves every chunk's pieces to the planes, one chunk after
  /// the other; the passes YI, XC and YF of chunk c run as soon as its pieces are in (beside
  /// the transfer of chunk c + 1 …), and its products go back while the next chunk's passes
  /// run. ZFP waits for the last. The results are those of the serial order bit for bit (the
  /// same kernels, each block on the same data).
  void overlapped_transforms() {
    const StageArrays<T> none{};
    const int C = int(planes_by_chunk_.size());
    VH_CHECK_CUDA(cudaEventRecord(ready_, st_));  // zb written by ZI or ZFP
    VH_CHECK_CUDA(cudaStreamWaitEvent(cs_, ready_, 0));
    for (int c = 0; c < C; ++c) {
      comm_.exchange_on(cs_, planes_by_chunk_[c]);
      VH_CHECK_CUDA(cudaEventRecord(chunk_[c], cs_));
    }
    for (int c = 0; c < C; ++c) {
      const fused::Part part{0, -1, chunk_plane(c, fl_.nzl), chunk_plane(c + 1, fl_.nzl)};
      VH_CHECK_CUDA(cudaStreamWaitEvent(st_, chunk_[c], 0));
      for (fused::Pass p : {fused::Pass::y_inverse, fused::Pass::x_cross, fused::Pass::y_forward})
        pass(p, kernel::kRhsOnly, 0, 0, none, false, part);
      VH_CHECK_CUDA(cudaEventRecord(chunk_[c], st_));
      VH_CHECK_CUDA(cudaStreamWaitEvent(cs_, chunk_[c], 0));
      comm_.exchange_on(cs_, columns_by_chunk_[c]);
    }
    VH_CHECK_CUDA(cudaEventRecord(ready_, cs_));
    VH_CHECK_CUDA(cudaStreamWaitEvent(st_, ready_, 0));  // ZFP reads what came back
  }

  static constexpr int kMaxPlaneChunks = 4;
  static constexpr double kChunkBytes = 32e6;
  /// The first plane of chunk c of a rank's nz planes (overlapped_transforms()).
  int chunk_plane(int c, int nz) const { return int(std::size_t(c) * nz / planes_by_chunk_.size()); }

  /// Fused: the pieces both exchanges move (fused_kernel.h, FusedLayout): zb's planes of rank
  /// q, field by field, are one piece of q's zt (6 fields to the planes, the 3 products back),
  /// planned once (collective), whole and by chunks of planes.
  void make_pieces(int chunks) {
    struct Pieces {
      std::vector<DeviceComm::Send> sends;
      std::vector<DeviceComm::Recv> recvs;
    };
    const int R = eval_.l.ranks;
    // Chunks of at least 32 MB (the six fields' pieces a rank sends, on average over the ranks),
    // at most 4, as many on every rank (measured on 2 and 4 H200s: bench/RESULTS.md 2026-11-28
    // "peer copies"; smaller pieces pay the exchanges' fixed costs, more of them gain nothing).
    // One chunk overlaps nothing: the serial order then.
    double planes_bytes = 0;  // of every rank's exchange to the planes, the same on every rank
    for (int q = 0; q < R; ++q)
      for (int r = 0; r < R; ++r)
        if (r != q) planes_bytes += 6.0 * eval_.l.nzl_of(q) * fl_.njy_of(r) * fl_.nxp * sizeof(Cx<T>);
    int C = chunks > 0 ? chunks : std::max(1, std::min(kMaxPlaneChunks, int(planes_bytes / R / kChunkBytes)));
    for (int r = 0; r < R; ++r) C = std::max(1, std::min(C, eval_.l.nzl_of(r)));
    planes_by_chunk_.resize(std::size_t(C));
    columns_by_chunk_.resize(std::size_t(C));
    // Chunk c of the planes of rank r, [lo, hi) of its nzl_of(r), moves as one piece per field:
    // from zb's rows of those planes (plane stride njy nxp) into r's zt rows (stride njy_of(me) nxp).
    const std::size_t e = sizeof(Cx<T>);
    for (int c = -1; c < C; ++c) {  // −1: the whole planes at once
      Pieces planes, columns;
      for (int r = 0; r < R; ++r) {
        const int nr = eval_.l.nzl_of(r), n_me = fl_.nzl;
        const int lo = c < 0 ? 0 : chunk_plane(c, nr), hi = c < 0 ? nr : chunk_plane(c + 1, nr);
        const int mlo = c < 0 ? 0 : chunk_plane(c, n_me), mhi = c < 0 ? n_me : chunk_plane(c + 1, n_me);
        const std::size_t zb_bytes = std::size_t(hi - lo) * fl_.njy * fl_.nxp * e;        // my ky, r's planes
        const std::size_t zt_bytes = std::size_t(mhi - mlo) * fl_.njy_of(r) * fl_.nxp * e;  // r's ky, my planes
        for (int f = 0; f < 6; ++f) {
          Cx<T>* zb = b1_ + fl_.zb_piece(f, eval_.l.z0_of(r) + lo);
          Cx<T>* zt = b2_ + fl_.zt_piece(f, r) + std::size_t(mlo) * fl_.njy_of(r) * fl_.nxp;
          planes.sends.push_back({r, zb, zb_bytes});
          planes.recvs.push_back({r, zt, zt_bytes});
          if (f < 3) {
            columns.sends.push_back({r, zt, zt_bytes});
            columns.recvs.push_back({r, zb, zb_bytes});
          }
        }
      }
      (c < 0 ? to_planes_ : planes_by_chunk_[std::size_t(c)]) = comm_.plan(planes.sends, planes.recvs);
      (c < 0 ? to_columns_ : columns_by_chunk_[std::size_t(c)]) = comm_.plan(columns.sends, columns.recvs);
    }
  }

  Slab slab_;
  cudaStream_t st_;
  bool fused_;
  Lines eval_, maxu_;
  kernel::FusedLayout fl_{};
  DeviceComm comm_;
  SlabProfile prof_;
  DeviceArray<Cx<T>> mem_[3];
  Cx<T>*b1_ = nullptr, *b2_ = nullptr, *b3_ = nullptr;  // mem_: z side (Z or zb), y side (Y or zt), rows (X or yb)
  DeviceArray<Cx<T>> msg_;                 // the lines' message buffers, unless they live in the rows
  Cx<T>*send_ = nullptr, *recv_ = nullptr;  // the all-to-all's device buffers (msg_ or b3_)
  DeviceBytes ws_;
  std::vector<cufftHandle> plans_;
  DeviceComm::Plan to_planes_, to_columns_;  // fused: what the two exchanges move (make_pieces)
  std::vector<DeviceComm::Plan> planes_by_chunk_, columns_by_chunk_;  // the same, by chunks of planes (overlap)
  bool overlap_ = false;           // overlapped_transforms()
  cudaStream_t cs_ = nullptr;      // its exchanges' stream
  cudaEvent_t ready_ = nullptr;
  std::vector<cudaEvent_t> chunk_;  // a chunk's pieces in, then its products out
};

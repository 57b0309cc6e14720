#include "base/comm.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>


#ifdef VH_HAVE_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support
#endif
#endif

namespace vh {

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

}  // namespace

#ifdef VH_HAVE_MPI

namespace {

MPI_Comm to_mpi(std::intptr_t h) {
  MPI_Comm c;
  static_assert(sizeof(c) <= sizeof(h), "MPI_Comm must fit an intptr_t");
  std::memcpy(&c, &h, sizeof c);
  return c;
}

void check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw LibraryError(std::string("MPI call failed: ") + call + " (" + std::string(msg, std::size_t(len)) + ")",
                     file, line);
}
#define VH_MPI(call) check((call), #call, __FILE__, __LINE__)

bool initialised() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

/// A contiguous type of `bytes` bytes (committed once per size, freed by MPI_Finalize).
MPI_Datatype element_type(std::size_t bytes) {
  static std::map<std::size_t, MPI_Datatype> types;
  auto it = types.find(bytes);
  if (it != types.end()) return it->second;
  MPI_Datatype t;
  VH_MPI(MPI_Type_contiguous(int(bytes), MPI_BYTE, &t));
  VH_MPI(MPI_Type_commit(&t));
  return types[bytes] = t;
}

std::vector<int> to_int(const std::vector<std::size_t>& v, const char* what) {
  std::vector<int> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    VH_CHECK(v[i] <= std::size_t(INT_MAX), std::string("MPI ") + what + " above 2^31 elements");
    r[i] = int(v[i]);
  }
  return r;
}

}  // namespace

Comm Comm::world() {
  if (!initialised()) return Comm();
  static Comm w = [] {
    Comm c;
    MPI_Comm h = MPI_COMM_WORLD;
    std::memcpy(&c.handle_, &h, sizeof h);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size_);
    MPI_Comm node;
    VH_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c.rank_, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &c.local_rank_);
    MPI_Comm_size(node, &c.local_size_);
    MPI_Comm_free(&node);
    return c;
  }();
  return w;
}

double Comm::sum(double v) const {
  if (size_ == 1) return v;
  double r = 0;
  VH_MPI(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, to_mpi(handle_)));
  return r;
}

void Comm::sum(std::vector<double>& v) const {
  if (size_ == 1 || v.empty()) return;
  VH_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_SUM, to_mpi(handle_)));
}

double Comm::max(double v) const {
  if (size_ == 1) return v;
  double r = 0;
  VH_MPI(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, to_mpi(handle_)));
  return r;
}

bool Comm::any(bool v) const {
  if (size_ == 1) return v;
  int a = v ? 1 : 0, r = 0;
  VH_MPI(MPI_Allreduce(&a, &r, 1, MPI_INT, MPI_MAX, to_mpi(handle_)));
  return r != 0;
}

void Comm::alltoallv(const void* send, const std::vector<std::size_t>& sc, const std::vector<std::size_t>& sd,
                     void* recv, const std::vector<std::size_t>& rc, const std::vector<std::size_t>& rd,
                     std::size_t elem_bytes) const {
  if (size_ == 1) {
    if (sc[0] > 0)
      std::memcpy(static_cast<char*>(recv) + rd[0] * elem_bytes, static_cast<const char*>(send) + sd[0] * elem_bytes,
                  sc[0] * elem_bytes);
    return;
  }
  const auto isc = to_int(sc, "send count"), isd = to_int(sd, "send displacement");
  const auto irc = to_int(rc, "receive count"), ird = to_int(rd, "receive displacement");
  const MPI_Datatype t = element_type(elem_bytes);
  VH_MPI(MPI_Alltoallv(send, isc.data(), isd.data(), t, recv, irc.data(), ird.data(), t, to_mpi(handle_)));
}

void Comm::gatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                   std::size_t elem_bytes) const {
  if (size_ == 1) {
    if (count > 0) std::memcpy(recv, send, count * elem_bytes);
    return;
  }
  const auto ic = to_int(counts, "gather count"), id = to_int(displacements(counts), "gather displacement");
  const MPI_Datatype t = element_type(elem_bytes);
  VH_MPI(MPI_Gatherv(send, int(count), t, recv, ic.data(), id.data(), t, 0, to_mpi(handle_)));
}

void Comm::scatterv(const void* send, const std::vector<std::size_t>& counts, void* recv, std::size_t count,
                    std::size_t elem_bytes) const {
  if (size_ == 1) {
    if (count > 0) std::memcpy(recv, send, count * elem_bytes);
    return;
  }
  const auto ic = to_int(counts, "scatter count"), id = to_int(displacements(counts), "scatter displacement");
  const MPI_Datatype t = element_type(elem_bytes);
  VH_MPI(MPI_Scatterv(send, ic.data(), id.data(), t, recv, int(count), t, 0, to_mpi(handle_)));
}

void Comm::send(const void* data, std::size_t bytes, int dest, int tag) const {
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI message above 2^31 bytes");
  VH_MPI(MPI_Send(data, int(bytes), MPI_BYTE, dest, tag, to_mpi(handle_)));
}

void Comm::recv(void* data, std::size_t bytes, int source, int tag) const {
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI message above 2^31 bytes");
  VH_MPI(MPI_Recv(data, int(bytes), MPI_BYTE, source, tag, to_mpi(handle_), MPI_STATUS_IGNORE));
}

void Comm::allgather(const void* send, std::size_t bytes, void* recv) const {
  if (size_ == 1) {
    if (bytes > 0) std::memcpy(recv, send, bytes);
    return;
  }
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI allgather above 2^31 bytes a rank");
  VH_MPI(MPI_Allgather(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, to_mpi(handle_)));
}

void Comm::allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                      std::size_t elem_bytes) const {
  if (size_ == 1) {
    if (count > 0) std::memcpy(recv, send, count * elem_bytes);
    return;
  }
  const auto ic = to_int(counts, "allgather count"), id = to_int(displacements(counts), "allgather displacement");
  const MPI_Datatype t = element_type(elem_bytes);
  VH_MPI(MPI_Allgatherv(send, int(count), t, recv, ic.data(), id.data(), t, to_mpi(handle_)));
}

namespace {

MPI_Request to_request(std::intptr_t h) {
  MPI_Request r;
  static_assert(sizeof(r) <= sizeof(h), "MPI_Request must fit an intptr_t");
  std::memcpy(&r, &h, sizeof r);
  return r;
}
std::intptr_t from_request(MPI_Request r) {
  std::intptr_t h = 0;
  std::memcpy(&h, &r, sizeof r);
  return h;
}

}  // namespace

Comm::Request Comm::isend(const void* data, std::size_t bytes, int dest, int tag) const {
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI message above 2^31 bytes");
  VH_CHECK(mpi(), "isend without MPI");
  MPI_Request r;
  VH_MPI(MPI_Isend(data, int(bytes), MPI_BYTE, dest, tag, to_mpi(handle_), &r));
  Request q;
  q.h_ = from_request(r);
  return q;
}

Comm::Request Comm::irecv(void* data, std::size_t bytes, int source, int tag) const {
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI message above 2^31 bytes");
  VH_CHECK(mpi(), "irecv without MPI");
  MPI_Request r;
  VH_MPI(MPI_Irecv(data, int(bytes), MPI_BYTE, source, tag, to_mpi(handle_), &r));
  Request q;
  q.h_ = from_request(r);
  return q;
}

void Comm::wait(Request& q) {
  if (!q.h_) return;
  MPI_Request r = to_request(q.h_);
  q.h_ = 0;
  VH_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
}

void Comm::wait_all(std::vector<Request>& qs) {
  std::vector<MPI_Request> rs;
  rs.reserve(qs.size());
  for (Request& q : qs)
    if (q.h_) rs.push_back(to_request(q.h_)), q.h_ = 0;
  if (!rs.empty()) VH_MPI(MPI_Waitall(int(rs.size()), rs.data(), MPI_STATUSES_IGNORE));
}

Comm::Request::~Request() {
  if (h_) {
    MPI_Request r = to_request(h_);
    MPI_Wait(&r, MPI_STATUS_IGNORE);  // no throw from a destructor
  }
}

void Comm::bcast(void* data, std::size_t bytes, int root) const {
  if (size_ == 1 || bytes == 0) return;
  VH_CHECK(bytes <= std::size_t(INT_MAX), "MPI broadcast above 2^31 bytes");
  VH_MPI(MPI_Bcast(data, int(bytes), MPI_BYTE, root, to_mpi(handle_)));
}

void Comm::barrier() const {
  if (size_ > 1) VH_MPI(MPI_Barrier(to_mpi(handle_)));
}

void Comm::abort(int status) const {
  if (mpi()) MPI_Abort(to_mpi(handle_), status);
  std::exit(status);
}

bool Comm::cuda_aware() {
  if (env_is("VH_MPI_CUDA_AWARE", "1")) return true;
  if (env_is("VH_MPI_CUDA_AWARE", "0") || !initialised()) return false;
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  // Asked of the library loaded at run time, not the headers compiled against: Debian's Open
  // MPI answers 0; a CUDA-aware build of the same ABI answers 1.
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int yes = 0;
  return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes;
#else
  return false;
#endif
}

std::string Comm::library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, std::size_t(len));
  const auto cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
  if (env_is("VH_MPI", "0") || !(launched || env_is("VH_MPI", "1"))) return;
  int provided = 0;
  VH_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  active_ = true;
}

MpiSession::~MpiSession() {
  if (active_ && initialised()) MPI_Finalize();
}

#else  // no MPI in this build: one rank

Comm Comm::world() { return Comm(); }
double Comm::sum(double v) const { return v; }
void Comm::sum(std::vector<double>&) const {}
double Comm::max(double v) const { return v; }
bool Comm::any(bool v) const { return v; }
void Comm::alltoallv(const void* send, const std::vector<std::size_t>& sc, const std::vector<std::size_t>& sd,
                     void* recv, const std::vector<std::size_t>&, const std::vector<std::size_t>& rd,
                     std::size_t elem_bytes) const {
  if (sc[0] > 0)
    std::memcpy(static_cast<char*>(recv) + rd[0] * elem_bytes, static_cast<const char*>(send) + sd[0] * elem_bytes,
                sc[0] * elem_bytes);
}
void Comm::gatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>&,
                   std::size_t elem_bytes) const {
  if (count > 0) std::memcpy(recv, send, count * elem_bytes);
}
void Comm::scatterv(const void* send, const std::vector<std::size_t>&, void* recv, std::size_t count,
                    std::size_t elem_bytes) const {
  if (count > 0) std::memcpy(recv, send, count * elem_bytes);
}
void Comm::allgather(const void* send, std::size_t bytes, void* recv) const {
  if (bytes > 0) std::memcpy(recv, send, bytes);
}
void Comm::allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>&,
                      std::size_t elem_bytes) const {
  if (count > 0) std::memcpy(recv, send, count * elem_bytes);
}
Comm::Request Comm::isend(const void*, std::size_t, int, int) const { VH_CHECK(false, "no MPI in this build"); }
Comm::Request Comm::irecv(void*, std::size_t, int, int) const { VH_CHECK(false, "no MPI in this build"); }
void Comm::wait(Request&) {}
void Comm::wait_all(std::vector<Request>&) {}
Comm::Request::~Request() = default;
void Comm::send(const void*, std::size_t, int, int) const { VH_CHECK(false, "no MPI in this build"); }
void Comm::recv(void*, std::size_t, int, int) const { VH_CHECK(false, "no MPI in this build"); }
void Comm::bcast(void*, std::size_t, int) const {}
void Comm::barrier() const {}
void Comm::abort(int status) const { std::exit(status); }
bool Comm::cuda_aware() { return false; }
std::string Comm::library() { return "none"; }
MpiSession::MpiSession(int*, char***) {}
MpiSession::~MpiSession() = default;

#endif

void Comm::bcast(std::string& s, int root) const {
  if (size_ == 1) return;
  std::uint64_t n = s.size();
  bcast(&n, sizeof n, root);
  s.resize(n);
  bcast(s.data(), n, root);
}

std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

std::vector<std::size_t> Comm::alltoall_counts(const std::vector<std::size_t>& send) const {
  VH_CHECK(send.size() == static_cast<std::size_t>(size_), "alltoall_counts: one count per rank expected");
  const std::vector<std::size_t> ones(send.size(), 1), at = displacements(ones);
  std::vector<std::size_t> recv(send.size());
  alltoallv(send.data(), ones, at, recv.data(), ones, at, sizeof(std::size_t));
  return recv;
}

std::vector<std::size_t> Comm::counts(std::size_t count) const {
  std::vector<std::size_t> c(static_cast<std::size_t>(size_));
  allgather(&count, sizeof count, c.data());
  return c;
}

Comm::Request& Comm::Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    Request done(std::move(*this));  // waits for a pending one as it goes
    h_ = o.h_;
    o.h_ = 0;
  }
  return *this;
}

std::string Comm::first_error(const std::string& mine) const {
  if (size_ == 1) return mine;
  const int first = int(-max(mine.empty() ? -double(size_) : -double(rank_)));
  if (first == size_) return "";
  std::string line = mine;
  bcast(line, first);
  return first > 0 ? "rank " + std::to_string(first) + ": " + line : line;
}

void RootErrors::rethrow(const Comm& comm) {
  // kind: 0 none, 1 InputError, 2 RunStopped, 3 anything else, 4 WriteError (msg: its reason)
  int kind = 0;
  std::string msg, path;
  if (comm.root() && error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const InputError& e) {
      kind = 1, msg = e.what();
    } catch (const RunStopped& e) {
      kind = 2, msg = e.what();
    } catch (const WriteError& e) {
      kind = 4, msg = e.reason(), path = e.path();
    } catch (const std::exception& e) {
      kind = 3, msg = e.what();
    } catch (...) {
      kind = 3, msg = "unknown error";
    }
  }
  if (comm.size() > 1) {
    comm.bcast(&kind, sizeof kind);
    comm.bcast(msg);
    if (kind == 4) comm.bcast(path);
  }
  const std::exception_ptr mine = error_;
  error_ = nullptr;
  if (mine && kind != 3) std::rethrow_exception(mine);  // the original, with its type (rank 0)
  if (kind == 1) throw InputError(msg);
  if (kind == 2) throw RunStopped(msg);
  if (kind == 4) throw WriteError(path, msg);
  if (kind == 3) throw SharedError(msg);
}

}  // namespace vh

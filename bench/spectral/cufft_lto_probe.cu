// cufft_lto_probe: why do cuFFT LTO callback plans (cufftXtSetJITCallback) fail to build?
//
// Each variant runs in its own process (`cufft_lto_probe <variant>`; `all` forks one child
// per variant so a variant that corrupts the context cannot spoil the next) and prints one
// line: the cufftResult of cufftXtSetJITCallback and of cufftMakePlanMany64, and when the
// plan was made, the output against the same transform without callback (the callbacks
// scale by s = 0.5, a power of two, so the expected output is exactly s times the plain
// transform's).
//
// Variants cover: the callback's LTO-IR (nvcc lto_75, nvcc lto_90, NVRTC -dlto at run
// time for compute_90 / compute_75); 1-D Z2D of 64 points, 3-D 32^3 Z2D / D2Z / C2R with
// load, store and both; the lifetime of what cufftXtSetJITCallback is given (the caller-info
// slot `void**`, the fatbin bytes, the symbol name), each changed between the Set call and
// MakePlan; and the d7a6ad4 solver's plan_many with its own callbacks (loop-local caller
// info) against the same with a caller-info slot that outlives the plan.
// `cufft_lto_probe info` prints the versions, the loaded libraries and a direct nvJitLink
// link of each fatbin at -arch=sm_90; `linkcheck` (no GPU) repeats cuFFT's own wrapper link;
// `driverjit` loads and runs a kernel linked with the callback by the driver and by nvJitLink.
//
// What it showed on the H200 (CUDA 13.0, cuFFT 12.0.0.61, 2026-11-22; bench/RESULTS.md):
// cuFFT compiles a wrapper with NVRTC that declares the named callback in C++
// (`extern __device__ T name(void*, unsigned long long, void*, void*)`), so it links to the
// mangled symbol: extern "C" callbacks fail with CUFFT_INTERNAL_ERROR (nvJitLink: "ptxas
// fatal: Unresolved extern function '_Z12probe_ldc_zaPvyS_S_'"), C++ ones work for every IR
// (nvcc lto_75/lto_90, NVRTC compute_75/90), 1-D and 3-D, load, store and both, exactly
// (errors ≤ 3.3e-16 against s × the plain transform). cuFFT reads the caller-info slot at
// the Set call (a slot changed before MakePlan is not seen) but the fatbin and the name only
// at MakePlan (zeroed fatbin: error 5; changed name: the new name is linked), so those two
// must outlive the MakePlan call.
#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>
#include <dlfcn.h>
#include <link.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe_cb_lto75.h"  // probe_cb_lto75[] (nvcc, lto_75)
#include "probe_cb_lto90.h"  // probe_cb_lto90[] (nvcc, lto_90)
#include "probe_cb_src.h"    // probe_cb_src[] (the callback source text, for NVRTC)
#include "vh_cb_lto75.h"     // vh_cb_lto75[] (d7a6ad4's spectral/fft_callbacks.cu, extern "C", lto_75)
#include "vhfix_cb_lto75.h"  // vhfix_cb_lto75[] (the working tree's spectral/fft_callbacks.cu, lto_75)
#include "probe_kernel_lto90.h"  // probe_kernel_lto90[] (cufft_lto_probe_kernel.cu, lto_90)
#include "probe_kernel_ptx.h"    // probe_kernel_ptx[] (same, PTX, -rdc)
#include "probe_cb_ptx.h"        // probe_cb_ptx[] (the callbacks, PTX, -rdc)
#include <cuda.h>  // types only; the functions come from libcuda.so.1 by dlsym (drv)

namespace {

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("  CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

struct Blob {
  std::vector<char> bytes;
  std::string how;
};

// ---- NVRTC at run time (dlopen: the probe must start without it) ---------------------
Blob nvrtc_lto(const char* arch) {
  Blob b;
  void* h = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    b.how = std::string("dlopen libnvrtc.so.13 failed: ") + dlerror();
    return b;
  }
  auto create = (nvrtcResult(*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                const char* const*))dlsym(h, "nvrtcCreateProgram");
  auto compile = (nvrtcResult(*)(nvrtcProgram, int, const char* const*))dlsym(h, "nvrtcCompileProgram");
  auto logsize = (nvrtcResult(*)(nvrtcProgram, size_t*))dlsym(h, "nvrtcGetProgramLogSize");
  auto getlog = (nvrtcResult(*)(nvrtcProgram, char*))dlsym(h, "nvrtcGetProgramLog");
  auto irsize = (nvrtcResult(*)(nvrtcProgram, size_t*))dlsym(h, "nvrtcGetLTOIRSize");
  auto getir = (nvrtcResult(*)(nvrtcProgram, char*))dlsym(h, "nvrtcGetLTOIR");
  if (!create || !compile || !logsize || !getlog || !irsize || !getir) {
    b.how = "nvrtc symbols missing";
    return b;
  }
  nvrtcProgram p;
  create(&p, reinterpret_cast<const char*>(probe_cb_src), "probe_cb.cu", 0, nullptr, nullptr);
  std::string a = std::string("-arch=") + arch;
  const char* opts[] = {a.c_str(), "--relocatable-device-code=true", "-dlto", "--std=c++17"};
  nvrtcResult r = compile(p, 4, opts);
  size_t n = 0;
  logsize(p, &n);
  std::string log(n, '\0');
  if (n) getlog(p, &log[0]);
  if (r != NVRTC_SUCCESS) {
    b.how = "nvrtc compile failed (" + std::to_string(int(r)) + "): " + log;
    return b;
  }
  irsize(p, &n);
  b.bytes.resize(n);
  getir(p, b.bytes.data());
  b.how = std::string("nvrtc ") + arch + " -dlto";
  return b;
}

Blob fatbin(const std::string& which) {
  Blob b;
  auto from = [&](const void* p, size_t n, const char* how) {
    b.bytes.assign(static_cast<const char*>(p), static_cast<const char*>(p) + n);
    b.how = how;
  };
  if (which == "nvcc75") from(probe_cb_lto75, sizeof probe_cb_lto75, "nvcc lto_75 -fatbin");
  else if (which == "nvcc90") from(probe_cb_lto90, sizeof probe_cb_lto90, "nvcc lto_90 -fatbin");
  else if (which == "vh75") from(vh_cb_lto75, sizeof vh_cb_lto75, "nvcc lto_75 -fatbin (d7a6ad4 fft_callbacks.cu, extern C)");
  else if (which == "vhfix75") from(vhfix_cb_lto75, sizeof vhfix_cb_lto75, "nvcc lto_75 -fatbin (fft_callbacks.cu, C++ linkage)");
  else if (which == "nvrtc90") b = nvrtc_lto("compute_90");
  else if (which == "nvrtc75") b = nvrtc_lto("compute_75");
  return b;
}

// ---- one transform case ---------------------------------------------------------------
enum class Kind { Z2D, D2Z, C2R };
struct Cb {
  const char* sym;
  cufftXtCallbackType type;
};
enum class Life { keep, ci_swap, ci_garbage, fatbin_zero, name_swap };

struct Case {
  const char* id;
  int dim, n, batch;
  Kind kind;
  std::vector<Cb> cbs;
  const char* fb;
  Life life;
};

const char* life_name(Life l) {
  switch (l) {
    case Life::keep: return "all-kept";
    case Life::ci_swap: return "caller_info-slot-changed-after-Set";
    case Life::ci_garbage: return "caller_info-slot-garbage-after-Set";
    case Life::fatbin_zero: return "fatbin-copy-zeroed-after-Set";
    case Life::name_swap: return "name-buffer-changed-after-Set";
  }
  return "?";
}

struct ProbeInfo {
  double s;
};

long long elems_real(const Case& c) { return c.dim == 1 ? c.n : (long long)c.n * c.n * c.n; }
long long elems_cx(const Case& c) { return c.dim == 1 ? c.n / 2 + 1 : (long long)c.n * c.n * (c.n / 2 + 1); }

cufftResult make(cufftHandle h, const Case& c, size_t* ws) {
  long long n[3] = {c.n, c.n, c.n};
  cufftType t = c.kind == Kind::Z2D ? CUFFT_Z2D : c.kind == Kind::D2Z ? CUFFT_D2Z : CUFFT_C2R;
  return cufftMakePlanMany64(h, c.dim, n, nullptr, 1, 0, nullptr, 1, 0, t, c.batch, ws);
}

cufftResult exec(cufftHandle h, const Case& c, void* in, void* out) {
  switch (c.kind) {
    case Kind::Z2D: return cufftExecZ2D(h, (cufftDoubleComplex*)in, (cufftDoubleReal*)out);
    case Kind::D2Z: return cufftExecD2Z(h, (cufftDoubleReal*)in, (cufftDoubleComplex*)out);
    case Kind::C2R: return cufftExecC2R(h, (cufftComplex*)in, (cufftReal*)out);
  }
  return CUFFT_INVALID_VALUE;
}

int run_case(const Case& c) {
  const bool sp = c.kind == Kind::C2R;
  const size_t es = sp ? sizeof(float) : sizeof(double);
  const long long nr = elems_real(c) * c.batch, nc = elems_cx(c) * c.batch;
  // Input: a Hermitian spectrum (forward transform of random reals) for C2R/Z2D, the reals for D2Z.
  std::vector<double> xr(nr);
  srand(7);
  for (auto& v : xr) v = double(rand()) / RAND_MAX - 0.5;
  void *dr, *dc;
  CK(cudaMalloc(&dr, nr * es));
  CK(cudaMalloc(&dc, nc * 2 * es));
  if (sp) {
    std::vector<float> f(xr.begin(), xr.end());
    CK(cudaMemcpy(dr, f.data(), nr * es, cudaMemcpyHostToDevice));
  } else {
    CK(cudaMemcpy(dr, xr.data(), nr * es, cudaMemcpyHostToDevice));
  }
  const bool inverse = c.kind != Kind::D2Z;
  std::vector<char> hin;  // host copy of the transform's input
  if (inverse) {
    cufftHandle f;
    long long n[3] = {c.n, c.n, c.n};
    size_t w;
    cufftCreate(&f);
    cufftMakePlanMany64(f, c.dim, n, nullptr, 1, 0, nullptr, 1, 0, sp ? CUFFT_R2C : CUFFT_D2Z, c.batch, &w);
    if (sp) cufftExecR2C(f, (cufftReal*)dr, (cufftComplex*)dc);
    else cufftExecD2Z(f, (cufftDoubleReal*)dr, (cufftDoubleComplex*)dc);
    CK(cudaDeviceSynchronize());
    cufftDestroy(f);
    hin.resize(nc * 2 * es);
    CK(cudaMemcpy(hin.data(), dc, hin.size(), cudaMemcpyDeviceToHost));
  } else {
    hin.resize(nr * es);
    CK(cudaMemcpy(hin.data(), dr, hin.size(), cudaMemcpyDeviceToHost));
  }
  void* din = inverse ? dc : dr;
  void* dout = inverse ? dr : dc;
  const size_t out_bytes = inverse ? nr * es : nc * 2 * es;
  auto to_double = [&](const std::vector<char>& raw) {
    std::vector<double> d(raw.size() / es);
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = sp ? double(reinterpret_cast<const float*>(raw.data())[i]) : reinterpret_cast<const double*>(raw.data())[i];
    return d;
  };

  // Reference: the same plan without callback.
  std::vector<double> ref;
  {
    cufftHandle h;
    size_t w;
    cufftCreate(&h);
    cufftResult r = make(h, c, &w);
    if (r != CUFFT_SUCCESS) {
      std::printf("variant=%s reference plan failed: %d\n", c.id, int(r));
      return 1;
    }
    CK(cudaMemcpy(din, hin.data(), hin.size(), cudaMemcpyHostToDevice));
    exec(h, c, din, dout);
    CK(cudaDeviceSynchronize());
    std::vector<char> raw(out_bytes);
    CK(cudaMemcpy(raw.data(), dout, out_bytes, cudaMemcpyDeviceToHost));
    ref = to_double(raw);
    cufftDestroy(h);
  }

  // Caller info: s = 0.5 (the one given), 0.25 (swapped in after the Set call).
  ProbeInfo i1{0.5}, i2{0.25};
  ProbeInfo *d1, *d2;
  CK(cudaMalloc(&d1, sizeof i1));
  CK(cudaMalloc(&d2, sizeof i2));
  CK(cudaMemcpy(d1, &i1, sizeof i1, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d2, &i2, sizeof i2, cudaMemcpyHostToDevice));

  Blob fb = fatbin(c.fb);
  if (fb.bytes.empty()) {
    std::printf("variant=%s fatbin=%s unavailable: %s\n", c.id, c.fb, fb.how.c_str());
    return 1;
  }
  std::vector<char> fbcopy(fb.bytes);  // the bytes handed to cuFFT
  std::vector<void*> slots(c.cbs.size(), d1);
  std::vector<std::vector<char>> names;
  for (const Cb& cb : c.cbs) names.emplace_back(cb.sym, cb.sym + std::strlen(cb.sym) + 1);

  cufftHandle h;
  cufftCreate(&h);
  std::string setr;
  for (size_t k = 0; k < c.cbs.size(); ++k) {
    cufftResult r = cufftXtSetJITCallback(h, names[k].data(), fbcopy.data(), fbcopy.size(), c.cbs[k].type, &slots[k]);
    setr += (k ? "," : "") + std::to_string(int(r));
  }
  switch (c.life) {
    case Life::keep: break;
    case Life::ci_swap: for (auto& s : slots) s = d2; break;
    case Life::ci_garbage: for (auto& s : slots) s = reinterpret_cast<void*>(0x10); break;
    case Life::fatbin_zero: std::memset(fbcopy.data(), 0, fbcopy.size()); break;
    case Life::name_swap:
      for (auto& nm : names) {
        char* p = std::strstr(nm.data(), "_za");
        if (p) p[2] = 'b';
      }
      break;
  }
  size_t ws = 0;
  auto t0 = std::chrono::steady_clock::now();
  cufftResult mr = make(h, c, &ws);
  const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("variant=%s dim=%d n=%d batch=%d kind=%s cbs=", c.id, c.dim, c.n, c.batch,
              c.kind == Kind::Z2D ? "Z2D" : c.kind == Kind::D2Z ? "D2Z" : "C2R");
  for (size_t k = 0; k < c.cbs.size(); ++k) std::printf("%s%s", k ? "+" : "", c.cbs[k].sym);
  std::printf(" ir=\"%s\" (%zu B) life=%s set=%s make=%d plan_ms=%.0f", fb.how.c_str(), fb.bytes.size(),
              life_name(c.life), setr.c_str(), int(mr), plan_ms);
  if (mr != CUFFT_SUCCESS) {
    std::printf(" -> FAILED\n");
    return 0;
  }
  CK(cudaMemcpy(din, hin.data(), hin.size(), cudaMemcpyHostToDevice));
  cufftResult er = exec(h, c, din, dout);
  cudaError_t se = cudaDeviceSynchronize();
  std::printf(" exec=%d sync=%s", int(er), cudaGetErrorName(se));
  if (er != CUFFT_SUCCESS || se != cudaSuccess) {
    std::printf(" -> EXEC FAILED\n");
    return 0;
  }
  std::vector<char> raw(out_bytes);
  CK(cudaMemcpy(raw.data(), dout, out_bytes, cudaMemcpyDeviceToHost));
  std::vector<double> out = to_double(raw);
  double mref = 0;
  for (double v : ref) mref = std::max(mref, std::fabs(v));
  // Which factor the output carries: s = 0.5 per callback (0.25 with load and store),
  // 0.25 when the swapped-in caller info was used, −0.5 when the swapped-in name was.
  const double cand[] = {0.5, 0.25, -0.5, 0.125, -0.25};
  double best = 0, besterr = 1e300;
  for (double f : cand) {
    double e = 0;
    for (size_t i = 0; i < out.size(); ++i) e = std::max(e, std::fabs(out[i] - f * ref[i]));
    if (e < besterr) besterr = e, best = f;
  }
  std::printf(" factor=%g max_rel_err=%.2e -> %s\n", best, besterr / (std::fabs(best) * mref),
              besterr / (std::fabs(best) * mref) < (sp ? 1e-5 : 1e-13) ? "OK" : "WRONG");
  cufftDestroy(h);
  return 0;
}

// ---- d7a6ad4's plan_many, verbatim in structure (in place, embeds, auto allocation off,
// the caller info in a loop-local `void* ci`), and the same with slots that outlive it ----
struct VhCb {
  const char* name;
  cufftXtCallbackType type;
};
__attribute__((noinline)) cufftResult d7_plan_many(int m, int howmany, const std::vector<VhCb>& cbs, void* info,
                                                   const std::vector<char>& fb, bool slot_outlives,
                                                   std::string& setr, cufftHandle& h) {
  long long n[3] = {m, m, m};
  long long cemb[3] = {m, m, m / 2 + 1};
  long long remb[3] = {m, m, 2 * (m / 2 + 1)};
  const long long cdist = (long long)m * m * (m / 2 + 1);
  static void* kept[4];  // slots that outlive the plan (the fix)
  cufftCreate(&h);
  int k = 0;
  for (const VhCb& cb : cbs) {
    void* ci = info;  // d7a6ad4: dies at the end of this iteration
    void** slot = &ci;
    if (slot_outlives) {
      kept[k] = info;
      slot = &kept[k];
    }
    cufftResult r = cufftXtSetJITCallback(h, cb.name, fb.data(), fb.size(), cb.type, slot);
    setr += (k++ ? "," : "") + std::to_string(int(r));
  }
  // Reuse the stack the way the solver's code after the loop may: a few locals written.
  volatile long long scratch[8];
  for (int i = 0; i < 8; ++i) scratch[i] = 0x5a5a5a5a5a5a5a5all + i;
  cufftSetAutoAllocation(h, 0);
  size_t ws = 0;
  return cufftMakePlanMany64(h, 3, n, cemb, 1, cdist, remb, 1, 2 * cdist, CUFFT_Z2D, howmany, &ws);
}

int run_d7(const char* id, bool slot_outlives, const char* which) {
  Blob fb = fatbin(which);
  void* info;
  CK(cudaMalloc(&info, 256));
  CK(cudaMemset(info, 0, 256));
  std::vector<VhCb> cbs = {{"vh_cb_load_retained_z", CUFFT_CB_LD_COMPLEX_DOUBLE},
                           {"vh_cb_store_cross_d", CUFFT_CB_ST_REAL_DOUBLE}};
  std::string setr;
  cufftHandle h;
  cufftResult r = d7_plan_many(32, 1, cbs, info, fb.bytes, slot_outlives, setr, h);
  std::printf("variant=%s dim=3 n=32 batch=1 kind=Z2D(in place, embeds, no auto alloc) "
              "cbs=vh_cb_load_retained_z+vh_cb_store_cross_d ir=\"%s\" (%zu B) life=%s set=%s make=%d%s\n",
              id, fb.how.c_str(), fb.bytes.size(), slot_outlives ? "caller_info-slot-static" : "caller_info-slot-loop-local(d7a6ad4)",
              setr.c_str(), int(r), r == CUFFT_SUCCESS ? " -> plan OK (not executed: zero caller info)" : " -> FAILED");
  return 0;
}

// ---- info: versions, libraries, direct nvJitLink link --------------------------------
int list_libs(dl_phdr_info* i, size_t, void*) {
  const char* n = i->dlpi_name;
  if (n && (std::strstr(n, "cufft") || std::strstr(n, "nvJitLink") || std::strstr(n, "nvrtc") ||
            std::strstr(n, "cudart") || std::strstr(n, "libcuda.")))
    std::printf("  loaded: %s\n", n);
  return 0;
}

void nvjitlink_try(const char* what, const std::vector<char>& bytes) {
  void* h = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    std::printf("  nvJitLink: dlopen failed: %s\n", dlerror());
    return;
  }
  auto create = (nvJitLinkResult(*)(nvJitLinkHandle*, uint32_t, const char**))dlsym(h, "__nvJitLinkCreate_13_0");
  auto add = (nvJitLinkResult(*)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t, const char*))dlsym(h, "__nvJitLinkAddData_13_0");
  auto complete = (nvJitLinkResult(*)(nvJitLinkHandle))dlsym(h, "__nvJitLinkComplete_13_0");
  auto esize = (nvJitLinkResult(*)(nvJitLinkHandle, size_t*))dlsym(h, "__nvJitLinkGetErrorLogSize_13_0");
  auto elog = (nvJitLinkResult(*)(nvJitLinkHandle, char*))dlsym(h, "__nvJitLinkGetErrorLog_13_0");
  auto destroy = (nvJitLinkResult(*)(nvJitLinkHandle*))dlsym(h, "__nvJitLinkDestroy_13_0");
  if (!create || !add || !complete || !esize || !elog || !destroy) {
    std::printf("  nvJitLink: versioned _13_0 symbols missing\n");
    return;
  }
  const char* opts[] = {"-arch=sm_90", "-lto"};
  nvJitLinkHandle l;
  nvJitLinkResult r = create(&l, 2, opts);
  nvJitLinkResult ra = r == NVJITLINK_SUCCESS ? add(l, NVJITLINK_INPUT_ANY, bytes.data(), bytes.size(), what) : r;
  nvJitLinkResult rc = ra == NVJITLINK_SUCCESS ? complete(l) : ra;
  size_t n = 0;
  std::string log;
  if (r == NVJITLINK_SUCCESS && esize(l, &n) == NVJITLINK_SUCCESS && n > 1) {
    log.resize(n);
    elog(l, &log[0]);
  }
  std::printf("  nvJitLink -arch=sm_90 -lto %-40s create=%d add=%d complete=%d %s\n", what, int(r), int(ra), int(rc),
              log.c_str());
  if (r == NVJITLINK_SUCCESS) destroy(&l);
}

/// What cuFFT does at plan time, without a GPU: NVRTC compiles its wrapper (the text and
/// options as they stand in libcufft.so.12: the callback declared `extern __device__` in
/// C++, -rdc -minimal -arch=compute_75 -dlto), nvJitLink links a kernel calling the wrapper,
/// the wrapper and the user's IR at sm_90.
void wrapper_link(const char* sym, const char* which) {
  void* hr = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_GLOBAL);
  void* hj = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!hr || !hj) {
    std::printf("  wrapper link: %s\n", dlerror());
    return;
  }
  auto create = (nvrtcResult(*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                const char* const*))dlsym(hr, "nvrtcCreateProgram");
  auto compile = (nvrtcResult(*)(nvrtcProgram, int, const char* const*))dlsym(hr, "nvrtcCompileProgram");
  auto irsize = (nvrtcResult(*)(nvrtcProgram, size_t*))dlsym(hr, "nvrtcGetLTOIRSize");
  auto getir = (nvrtcResult(*)(nvrtcProgram, char*))dlsym(hr, "nvrtcGetLTOIR");
  char src[1024];
  std::snprintf(src, sizeof src,
                "typedef double2 cufftDoubleComplex;\n"
                "extern __device__ cufftDoubleComplex %s(void *a, unsigned long long index, void *cb_info, void *sharedmem);\n"
                "__device__ cufftDoubleComplex cufftJITCallbackLoadDoubleComplex(void *a, unsigned long long index, void *cb_info, void *sharedmem)\n"
                "{\nreturn %s(a, index, cb_info, sharedmem);\n}\n"
                "extern \"C\" __global__ void k(double2* in, double2* out, void* info)\n"
                "{ out[threadIdx.x] = cufftJITCallbackLoadDoubleComplex(in, threadIdx.x, info, 0); }\n",
                sym, sym);
  nvrtcProgram p;
  create(&p, src, "wrapper_code.cu", 0, nullptr, nullptr);
  const char* o[] = {"--relocatable-device-code=true", "-minimal", "-arch=compute_75", "-dlto"};
  nvrtcResult r = compile(p, 4, o);
  size_t n = 0;
  irsize(p, &n);
  std::vector<char> w(n);
  getir(p, w.data());
  auto lcreate = (nvJitLinkResult(*)(nvJitLinkHandle*, uint32_t, const char**))dlsym(hj, "__nvJitLinkCreate_13_0");
  auto add = (nvJitLinkResult(*)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t, const char*))dlsym(hj, "__nvJitLinkAddData_13_0");
  auto complete = (nvJitLinkResult(*)(nvJitLinkHandle))dlsym(hj, "__nvJitLinkComplete_13_0");
  auto esize = (nvJitLinkResult(*)(nvJitLinkHandle, size_t*))dlsym(hj, "__nvJitLinkGetErrorLogSize_13_0");
  auto elog = (nvJitLinkResult(*)(nvJitLinkHandle, char*))dlsym(hj, "__nvJitLinkGetErrorLog_13_0");
  Blob b = fatbin(which);
  const char* lo[] = {"-arch=sm_90", "-lto"};
  nvJitLinkHandle l;
  nvJitLinkResult lr = lcreate(&l, 2, lo);
  if (lr == NVJITLINK_SUCCESS) lr = add(l, NVJITLINK_INPUT_LTOIR, w.data(), w.size(), "wrapper");
  if (lr == NVJITLINK_SUCCESS) lr = add(l, NVJITLINK_INPUT_ANY, b.bytes.data(), b.bytes.size(), "user");
  if (lr == NVJITLINK_SUCCESS) lr = complete(l);
  std::string log;
  if (esize(l, &n) == NVJITLINK_SUCCESS && n > 1) {
    log.resize(n);
    elog(l, &log[0]);
    for (char& c : log)
      if (c == '\n') c = ' ';
  }
  std::printf("  cuFFT-style wrapper -> %-14s (%s): nvrtc=%d link=%d %s\n", sym, b.how.c_str(), int(r), int(lr),
              lr == NVJITLINK_SUCCESS ? "OK" : log.c_str());
}

/// No CUDA: NVRTC compiles the callback source, nvJitLink links each IR at sm_90.
int linkcheck() {
  wrapper_link("probe_ldc_za", "nvcc75");  // extern "C" definition
  wrapper_link("probe_ld_za", "nvcc75");   // C++ definition
  wrapper_link("vh_cb_load_retained_z", "vh75");
  wrapper_link("vh_cb_load_retained_z", "vhfix75");
  for (const char* w : {"nvcc75", "nvcc90", "vh75", "vhfix75", "nvrtc90", "nvrtc75"}) {
    Blob b = fatbin(w);
    if (b.bytes.empty()) std::printf("  %s: %s\n", w, b.how.c_str());
    else nvjitlink_try(b.how.c_str(), b.bytes);
  }
  return 0;
}

// ---- driverjit: the steps of an LTO callback plan without cuFFT ----------------------
// Driver API from libcuda.so.1 by dlsym (no link to libcuda: `linkcheck` runs without a
// GPU). The names are the macro-expanded ones of cuda.h (cuLinkCreate -> cuLinkCreate_v2),
// the symbols a program linked to libcuda would call. (Through the runtime's
// cudaGetDriverEntryPointByVersion the kernel launches failed with
// CUDA_ERROR_CONTEXT_IS_DESTROYED on the H200, so not that way.)
template <class F>
F drv(const char* name) {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void* f = h ? dlsym(h, name) : nullptr;
  if (!f) {
    std::printf("  driver symbol %s not found\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(f);
}
#define DRV_STR(x) #x
#define DRV_NAME(x) DRV_STR(x)
#define DRV(fn) drv<decltype(&fn)>(DRV_NAME(fn))

const char* cu_err(CUresult r) {
  const char* s = nullptr;
  DRV(cuGetErrorName)(r, &s);
  return s ? s : "?";
}

/// Loads `image` (cubin or PTX) with the driver, runs probe_kernel (when `run`) on 64
/// elements and checks out = 0.5 in.
void load_and_run(const char* what, const void* image, bool run) {
  char elog[4096] = {0}, ilog[4096] = {0};
  CUjit_option o[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                       CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* ov[4] = {elog, (void*)(uintptr_t)sizeof elog, ilog, (void*)(uintptr_t)sizeof ilog};
  CUmodule m;
  CUresult r = DRV(cuModuleLoadDataEx)(&m, image, 4, o, ov);
  std::printf("  %-58s cuModuleLoadDataEx=%s %s", what, cu_err(r), elog);
  if (r != CUDA_SUCCESS || !run) {
    std::printf("\n");
    return;
  }
  CUfunction f;
  r = DRV(cuModuleGetFunction)(&f, m, "probe_kernel");
  const int n = 64;
  std::vector<double> h(2 * n), g(2 * n);
  for (int i = 0; i < 2 * n; ++i) h[i] = i + 1;
  double *din, *dout;
  ProbeInfo pi{0.5}, *dpi;
  CK(cudaMalloc(&din, 2 * n * sizeof(double)));
  CK(cudaMalloc(&dout, 2 * n * sizeof(double)));
  CK(cudaMalloc(&dpi, sizeof pi));
  CK(cudaMemcpy(din, h.data(), 2 * n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dpi, &pi, sizeof pi, cudaMemcpyHostToDevice));
  int nn = n;
  void* args[] = {&din, &dout, &dpi, &nn};
  if (r == CUDA_SUCCESS) r = DRV(cuLaunchKernel)(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr);
  if (r == CUDA_SUCCESS) r = DRV(cuCtxSynchronize)();
  std::printf(" launch=%s", cu_err(r));
  if (r == CUDA_SUCCESS) {
    CK(cudaMemcpy(g.data(), dout, 2 * n * sizeof(double), cudaMemcpyDeviceToHost));
    double e = 0;
    for (int i = 0; i < 2 * n; ++i) e = std::max(e, std::fabs(g[i] - 0.5 * h[i]));
    std::printf(" max_err=%g -> %s", e, e == 0 ? "OK" : "WRONG");
  }
  std::printf("\n");
  DRV(cuModuleUnload)(m);
}

int driverjit() {
  CK(cudaFree(nullptr));  // the primary context, current
  void* pj = dlopen("libnvidia-ptxjitcompiler.so.1", RTLD_NOW);
  Dl_info di;
  std::printf("  libnvidia-ptxjitcompiler.so.1: %s\n",
              pj ? (dladdr(dlsym(pj, "__cuda_CallJitEntryPoint") ? dlsym(pj, "__cuda_CallJitEntryPoint") : pj, &di) && di.dli_fname ? di.dli_fname : "loaded")
                 : dlerror());
  // (a) driver PTX JIT of the callbacks' PTX alone
  load_and_run("(a) driver JIT: callbacks PTX", probe_cb_ptx, false);
  // (b) driver linker (cuLink*, what cuFFT imports): kernel PTX + callbacks PTX
  {
    char elog[4096] = {0};
    CUjit_option o[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* ov[2] = {elog, (void*)(uintptr_t)sizeof elog};
    CUlinkState ls;
    CUresult r = DRV(cuLinkCreate)(2, o, ov, &ls);
    if (r == CUDA_SUCCESS)
      r = DRV(cuLinkAddData)(ls, CU_JIT_INPUT_PTX, (void*)probe_kernel_ptx, sizeof probe_kernel_ptx, "k.ptx", 0, nullptr, nullptr);
    if (r == CUDA_SUCCESS)
      r = DRV(cuLinkAddData)(ls, CU_JIT_INPUT_PTX, (void*)probe_cb_ptx, sizeof probe_cb_ptx, "cb.ptx", 0, nullptr, nullptr);
    void* cubin = nullptr;
    size_t sz = 0;
    if (r == CUDA_SUCCESS) r = DRV(cuLinkComplete)(ls, &cubin, &sz);
    std::printf("  (b) cuLinkCreate/AddData(PTX x2)/Complete = %s %s\n", cu_err(r), elog);
    if (r == CUDA_SUCCESS) load_and_run("(b) cubin from cuLink", cubin, true);
    DRV(cuLinkDestroy)(ls);
  }
  // (c)/(d) nvJitLink: kernel LTO-IR (lto_90) + callbacks LTO-IR (lto_75), to cubin and to PTX
  void* h = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    std::printf("  nvJitLink: %s\n", dlerror());
    return 0;
  }
  auto create = (nvJitLinkResult(*)(nvJitLinkHandle*, uint32_t, const char**))dlsym(h, "__nvJitLinkCreate_13_0");
  auto add = (nvJitLinkResult(*)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t, const char*))dlsym(h, "__nvJitLinkAddData_13_0");
  auto complete = (nvJitLinkResult(*)(nvJitLinkHandle))dlsym(h, "__nvJitLinkComplete_13_0");
  auto csize = (nvJitLinkResult(*)(nvJitLinkHandle, size_t*))dlsym(h, "__nvJitLinkGetLinkedCubinSize_13_0");
  auto cget = (nvJitLinkResult(*)(nvJitLinkHandle, void*))dlsym(h, "__nvJitLinkGetLinkedCubin_13_0");
  auto psize = (nvJitLinkResult(*)(nvJitLinkHandle, size_t*))dlsym(h, "__nvJitLinkGetLinkedPtxSize_13_0");
  auto pget = (nvJitLinkResult(*)(nvJitLinkHandle, char*))dlsym(h, "__nvJitLinkGetLinkedPtx_13_0");
  for (int ptx = 0; ptx < 2; ++ptx) {
    const char* opts[] = {"-arch=sm_90", "-lto", "-ptx"};
    nvJitLinkHandle l;
    nvJitLinkResult r = create(&l, ptx ? 3 : 2, opts);
    if (r == NVJITLINK_SUCCESS) r = add(l, NVJITLINK_INPUT_ANY, probe_kernel_lto90, sizeof probe_kernel_lto90, "kernel");
    if (r == NVJITLINK_SUCCESS) r = add(l, NVJITLINK_INPUT_ANY, probe_cb_lto75, sizeof probe_cb_lto75, "cb");
    if (r == NVJITLINK_SUCCESS) r = complete(l);
    std::printf("  (%c) nvJitLink kernel(lto_90)+callbacks(lto_75) -> %s: %d\n", ptx ? 'd' : 'c', ptx ? "PTX" : "cubin", int(r));
    if (r != NVJITLINK_SUCCESS) continue;
    size_t n = 0;
    std::vector<char> img;
    if (ptx) {
      psize(l, &n);
      img.resize(n + 1, 0);
      pget(l, img.data());
    } else {
      csize(l, &n);
      img.resize(n);
      cget(l, img.data());
    }
    load_and_run(ptx ? "(d) PTX from nvJitLink, driver JIT" : "(c) cubin from nvJitLink", img.data(), true);
  }
  return 0;
}

int info() {
  int v = 0, dv = 0, rv = 0;
  cufftGetVersion(&v);
  cudaDriverGetVersion(&dv);
  cudaRuntimeGetVersion(&rv);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device: %s sm_%d%d  driver API %d  runtime %d  cufftGetVersion %d\n", p.name, p.major, p.minor, dv,
              rv, v);
  // A callback plan, to make cuFFT load what it loads for callbacks.
  Blob fb = fatbin("nvcc75");
  cufftHandle h;
  cufftCreate(&h);
  ProbeInfo* d;
  CK(cudaMalloc(&d, sizeof(ProbeInfo)));
  void* slot = d;
  cufftXtSetJITCallback(h, "probe_ld_za", fb.bytes.data(), fb.bytes.size(), CUFFT_CB_LD_COMPLEX_DOUBLE, &slot);
  long long n = 64;
  size_t ws;
  cufftResult r = cufftMakePlanMany64(h, 1, &n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_Z2D, 1, &ws);
  std::printf("  1-D Z2D callback plan: make=%d; libraries loaded after it:\n", int(r));
  dl_iterate_phdr(list_libs, nullptr);
  if (void* jl = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_NOLOAD)) {
    auto ver = (nvJitLinkResult(*)(unsigned*, unsigned*))dlsym(jl, "nvJitLinkVersion");
    unsigned a = 0, b = 0;
    if (ver) ver(&a, &b);
    Dl_info di;
    std::printf("  nvJitLinkVersion %u.%u (%s)\n", a, b,
                ver && dladdr((void*)ver, &di) ? di.dli_fname : "?");
  } else {
    std::printf("  libnvJitLink.so.13 not loaded by cuFFT\n");
  }
  if (void* nr = dlopen("libnvrtc.so.13", RTLD_NOW)) {
    auto ver = (nvrtcResult(*)(int*, int*))dlsym(nr, "nvrtcVersion");
    int a = 0, b = 0;
    if (ver) ver(&a, &b);
    std::printf("  nvrtcVersion %d.%d\n", a, b);
  } else {
    std::printf("  libnvrtc.so.13: %s\n", dlerror());
  }
  return linkcheck();
}

std::vector<Case> cases() {
  const Cb ldzc{"probe_ldc_za", CUFFT_CB_LD_COMPLEX_DOUBLE};  // extern "C": the control
  const Cb ldz{"probe_ld_za", CUFFT_CB_LD_COMPLEX_DOUBLE}, std_{"probe_st_d", CUFFT_CB_ST_REAL_DOUBLE},
      stz{"probe_st_z", CUFFT_CB_ST_COMPLEX_DOUBLE}, ldc{"probe_ld_c", CUFFT_CB_LD_COMPLEX};
  return {
      {"1d-externC-nvcc75", 1, 64, 1, Kind::Z2D, {ldzc}, "nvcc75", Life::keep},
      {"1d-nvcc75", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc75", Life::keep},
      {"1d-nvcc90", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc90", Life::keep},
      {"1d-nvrtc90", 1, 64, 1, Kind::Z2D, {ldz}, "nvrtc90", Life::keep},
      {"1d-nvrtc75", 1, 64, 1, Kind::Z2D, {ldz}, "nvrtc75", Life::keep},
      {"1d-ci-swap", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc75", Life::ci_swap},
      {"1d-ci-garbage", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc75", Life::ci_garbage},
      {"1d-fatbin-zero", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc75", Life::fatbin_zero},
      {"1d-name-swap", 1, 64, 1, Kind::Z2D, {ldz}, "nvcc75", Life::name_swap},
      {"3d-z2d-ld", 3, 32, 1, Kind::Z2D, {ldz}, "nvcc75", Life::keep},
      {"3d-z2d-ld-b3", 3, 32, 3, Kind::Z2D, {ldz}, "nvcc75", Life::keep},
      {"3d-z2d-st", 3, 32, 1, Kind::Z2D, {std_}, "nvcc75", Life::keep},
      {"3d-z2d-ld+st", 3, 32, 1, Kind::Z2D, {ldz, std_}, "nvcc75", Life::keep},
      {"3d-d2z-st-b3", 3, 32, 3, Kind::D2Z, {stz}, "nvcc75", Life::keep},
      {"3d-c2r-ld-fp32", 3, 32, 1, Kind::C2R, {ldc}, "nvcc75", Life::keep},
      {"3d-z2d-ld-nvcc90", 3, 32, 1, Kind::Z2D, {ldz}, "nvcc90", Life::keep},
      {"3d-z2d-ld-ci-garbage", 3, 32, 1, Kind::Z2D, {ldz}, "nvcc75", Life::ci_garbage},
  };
}

int run_one(const std::string& v) {
  if (v == "info") return info();
  if (v == "linkcheck") return linkcheck();
  if (v == "driverjit") return driverjit();
  if (v == "d7-loop-local") return run_d7("d7-loop-local", false, "vh75");
  if (v == "d7-slot-kept") return run_d7("d7-slot-kept", true, "vh75");
  if (v == "fix-loop-local") return run_d7("fix-loop-local", false, "vhfix75");
  if (v == "fix-slot-kept") return run_d7("fix-slot-kept", true, "vhfix75");
  for (const Case& c : cases())
    if (v == c.id) return run_case(c);
  std::printf("unknown variant %s\n", v.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s info|linkcheck|driverjit|all|d7-loop-local|d7-slot-kept|fix-loop-local|fix-slot-kept|<variant>; variants:", argv[0]);
    for (const Case& c : cases()) std::printf(" %s", c.id);
    std::printf("\n");
    return 1;
  }
  std::string v = argv[1];
  if (v != "all") return run_one(v);
  std::vector<std::string> all = {"info", "driverjit"};
  for (const Case& c : cases()) all.push_back(c.id);
  for (const char* d : {"d7-loop-local", "d7-slot-kept", "fix-loop-local", "fix-slot-kept"}) all.push_back(d);
  for (const std::string& s : all) {  // one process each (no CUDA in the parent)
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(60);
      const int rc = run_one(s);
      std::fflush(stdout);
      std::_Exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
      std::printf("variant=%s child ended abnormally (status %d)\n", s.c_str(), st);
  }
  return 0;
}

// Device callbacks of cufft_lto_probe.cu. Self-contained (no #include) so that the same
// text compiles with nvcc (-dc -fatbin, LTO-IR) on the build machine and with NVRTC
// (-dlto) at run time on the device, where no CUDA headers may be installed. The types
// match cuFFT's ABI: cufftDoubleComplex = double2, cufftComplex = float2.
struct ProbeInfo {
  double s;  // scale applied by every callback
};

// C++ linkage at global scope, with cuFFT's parameter types: cuFFT's NVRTC wrapper declares
// the named callback in C++, so it links against the mangled name (_Z11probe_ld_zaPvyS_S_).
// probe_ldc_za below is the same function with C linkage (as d7a6ad4 had them): the control.

// Load, Z2D: the input element times s.
__device__ double2 probe_ld_za(void* in, unsigned long long o, void* info, void*) {
  const double s = static_cast<const ProbeInfo*>(info)->s;
  const double2 v = static_cast<const double2*>(in)[o];
  double2 r;
  r.x = s * v.x;
  r.y = s * v.y;
  return r;
}
// Same length of name, other sign: tells which name cuFFT used (name-lifetime variant).
__device__ double2 probe_ld_zb(void* in, unsigned long long o, void* info, void*) {
  const double s = -static_cast<const ProbeInfo*>(info)->s;
  const double2 v = static_cast<const double2*>(in)[o];
  double2 r;
  r.x = s * v.x;
  r.y = s * v.y;
  return r;
}
// Store, Z2D: the output real times s.
__device__ void probe_st_d(void* out, unsigned long long o, double v, void* info, void*) {
  static_cast<double*>(out)[o] = static_cast<const ProbeInfo*>(info)->s * v;
}
// Store, D2Z: the output complex times s.
__device__ void probe_st_z(void* out, unsigned long long o, double2 v, void* info, void*) {
  const double s = static_cast<const ProbeInfo*>(info)->s;
  double2 r;
  r.x = s * v.x;
  r.y = s * v.y;
  static_cast<double2*>(out)[o] = r;
}
// Load, C2R fp32.
__device__ float2 probe_ld_c(void* in, unsigned long long o, void* info, void*) {
  const float s = float(static_cast<const ProbeInfo*>(info)->s);
  const float2 v = static_cast<const float2*>(in)[o];
  float2 r;
  r.x = s * v.x;
  r.y = s * v.y;
  return r;
}

extern "C" __device__ double2 probe_ldc_za(void* in, unsigned long long o, void* info, void*) {
  const double s = static_cast<const ProbeInfo*>(info)->s;
  const double2 v = static_cast<const double2*>(in)[o];
  double2 r;
  r.x = s * v.x;
  r.y = s * v.y;
  return r;
}

// A kernel that calls the probe's load callback (cufft_lto_probe_cb.cu) through an extern
// declaration, compiled to LTO-IR: cufft_lto_probe `driverjit` links the two with nvJitLink
// and loads the result with the driver, the steps cuFFT takes for an LTO callback plan.
__device__ double2 probe_ld_za(void* in, unsigned long long o, void* info, void* shared);

extern "C" __global__ void probe_kernel(double2* in, double2* out, void* info, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = probe_ld_za(in, (unsigned long long)i, info, nullptr);
}

// Fused-pass kernels (fused_impl.cuh) for transform sizes 128 192 256, fp64 and fp32.
#include "spectral/fused_impl.cuh"

namespace vh::spectral::fused::detail {
template struct Passes<double, 128>;
template struct Passes<float, 128>;
template struct Passes<double, 192>;
template struct Passes<float, 192>;
template struct Passes<double, 256>;
template struct Passes<float, 256>;
}  // namespace vh::spectral::fused::detail

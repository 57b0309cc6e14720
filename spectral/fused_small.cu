// Fused-pass kernels (fused_impl.cuh) for transform sizes 32 48 64 96, fp64 and fp32.
#include "spectral/fused_impl.cuh"

namespace vh::spectral::fused::detail {
template struct Passes<double, 32>;
template struct Passes<float, 32>;
template struct Passes<double, 48>;
template struct Passes<float, 48>;
template struct Passes<double, 64>;
template struct Passes<float, 64>;
template struct Passes<double, 96>;
template struct Passes<float, 96>;
}  // namespace vh::spectral::fused::detail

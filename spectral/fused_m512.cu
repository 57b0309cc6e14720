// Fused-pass kernels (fused_impl.cuh) for transform sizes 512, fp64 and fp32.
#include "spectral/fused_impl.cuh"

namespace vh::spectral::fused::detail {
template struct Passes<double, 512>;
template struct Passes<float, 512>;
}  // namespace vh::spectral::fused::detail

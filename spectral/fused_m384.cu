// Fused-pass kernels (fused_impl.cuh) for transform sizes 384, fp64 and fp32.
#include "spectral/fused_impl.cuh"

namespace vh::spectral::fused::detail {
template struct Passes<double, 384>;
template struct Passes<float, 384>;
}  // namespace vh::spectral::fused::detail

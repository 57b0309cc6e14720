// The fused passes' GPU side in builds without CUDA or without cuFFTDx (fused.h): absent.
#include "core/error.h"
#include "spectral/fused.h"

namespace vh::spectral::fused {

bool built() { return false; }

std::string unsupported_reason(const kernel::Geometry&, bool) {
  return "this build has no cuFFTDx (VH_MATHDX_DIR; scripts/setup.sh fetches nvidia-mathdx)";
}

void run_pass_gpu(Pass, const kernel::Geometry& g, const StageArgs&, HostArrays&) {
  throw vh::InputError("fused transforms: " + unsupported_reason(g, false));
}

template <class T>
void launch(Pass, const kernel::FusedLayout& l, int, bool, T, T, const kernel::StageArrays<T>&, kernel::Cx<T>*,
            kernel::Cx<T>*, kernel::Cx<T>*, void*, Part) {
  throw vh::InputError("fused transforms: " + unsupported_reason(l.g, false));
}
template void launch<double>(Pass, const kernel::FusedLayout&, int, bool, double, double,
                             const kernel::StageArrays<double>&, kernel::Cx<double>*, kernel::Cx<double>*,
                             kernel::Cx<double>*, void*, Part);
template void launch<float>(Pass, const kernel::FusedLayout&, int, bool, float, float,
                            const kernel::StageArrays<float>&, kernel::Cx<float>*, kernel::Cx<float>*,
                            kernel::Cx<float>*, void*, Part);

}  // namespace vh::spectral::fused

// make_gpu_solver() of builds without CUDA.
#include "core/error.h"
#include "spectral/gpu_solver.h"

namespace vh::spectral {

std::unique_ptr<Solver> make_gpu_solver(const Params&, const Slab&) {
  throw vh::InputError("device: this build has no CUDA; the spectral solver runs on the CPU only");
}

}  // namespace vh::spectral

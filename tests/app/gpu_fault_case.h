// The runs that the GPU-fault tests break (gpu_fault.cu preloaded: test_gpu_fault.cpp on one rank,
// tests/mpi/test_mpi_run.cpp on several). The callers add their own options and `--output.dir=`.
#pragma once

#include <string>

namespace vh::test {

/// Both solvers at 32³ to t/T 1 with a checkpoint at every output (20). On a GPU the steps take
/// milliseconds, so a fault set off by the first checkpoint lands well before the end.
inline const std::string kGpuFaultCase =
    " run --domain.n=32 --case.solver=both --device=gpu --flow.Re_lambda=30 --flow.k_p=3 --vortex.refine=1"
    " --time.t_end_over_T=1 --time.output_interval_over_T=0.05 --output.fields_at= --output.checkpoint_every=1"
    " --quiet";
/// For a fault inside a checkpoint: 64³ at refine 1.5 (884 736 particles), whose checkpoint takes
/// some 0.1 s to write, so a fault set off as it begins (checkpoint_prev.h5 appears) lands inside.
inline const std::string kGpuFaultCheckpointCase =
    " run --domain.n=64 --case.solver=both --device=gpu --flow.Re_lambda=30 --flow.k_p=3"
    " --time.t_end_over_T=0.3 --time.output_interval_over_T=0.05 --output.fields_at= --output.checkpoint_every=1"
    " --quiet";

}  // namespace vh::test

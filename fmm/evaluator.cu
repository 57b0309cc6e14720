// GpuEvaluator (fmm/evaluator.h). First version: the inputs are staged to the host and the
// evaluation is fmm::evaluate_self / evaluate_at with use_gpu (which uploads them again), the
// results copied back to the device. Same results as the host API by construction; the resident
// evaluation replaces this body.
#include "fmm/evaluator.h"

#include <cuda_runtime.h>

#include <vector>

#include "fmm/cuda_util.h"

namespace vh::fmm {

struct GpuEvaluator::Impl {
  Params prm;
  std::vector<Vec3> x, alpha, targets, u;
  std::vector<double> sigma;
  std::vector<Mat3> grad;
};

GpuEvaluator::GpuEvaluator(const Params& prm) : impl_(std::make_unique<Impl>()) {
  impl_->prm = prm;
  impl_->prm.use_gpu = true;
  impl_->prm.validate();
}

GpuEvaluator::~GpuEvaluator() = default;

const Params& GpuEvaluator::params() const { return impl_->prm; }

namespace {
template <class T>
void down(std::vector<T>& h, const double* d, std::size_t n) {
  h.resize(n);
  VH_FMM_CUDA(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
}
template <class T>
void up(double* d, const std::vector<T>& h) {
  VH_FMM_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
}  // namespace

Timings GpuEvaluator::evaluate_self(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                    double* d_u, double* d_grad, bool /*same_positions*/) {
  Impl& s = *impl_;
  down(s.x, d_x, n);
  down(s.alpha, d_alpha, n);
  down(s.sigma, d_sigma, n);
  const Timings t = fmm::evaluate_self(s.prm, s.x, s.alpha, s.sigma, s.u, s.grad);
  up(d_u, s.u);
  up(d_grad, s.grad);
  return t;
}

Timings GpuEvaluator::evaluate_at(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                  const double* d_targets, std::size_t m, double* d_u, double* d_grad,
                                  bool /*same_positions*/) {
  Impl& s = *impl_;
  down(s.x, d_x, n);
  down(s.alpha, d_alpha, n);
  down(s.sigma, d_sigma, n);
  down(s.targets, d_targets, m);
  const Timings t = fmm::evaluate_at(s.prm, s.x, s.alpha, s.sigma, s.targets, s.u, s.grad);
  up(d_u, s.u);
  up(d_grad, s.grad);
  return t;
}

}  // namespace vh::fmm

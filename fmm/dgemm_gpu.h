// A matrix product on the GPU in double precision on the FP64 tensor cores (WMMA 8x8x4, sm_80
// and later; FP64 multiply-adds on older devices): the lattice leaves' P2M and L2P and the full
// levels' M2M and L2L (fmm/far_gpu_device.h LatticeLeaves, LatticeLevels), whose matrices are
// short and wide (a few hundred rows and inner terms, one column a cell).  Its own kernel rather than a BLAS library's: cuBLAS would add
// ~200 MiB of resident host memory to every process of the CUDA build at load time, CPU runs
// included.
#pragma once

#include <cuda_runtime.h>

namespace vh::fmm {

/// C = A B for column-major matrices on the device: A m x k (leading dimension lda >= m), C m x n
/// (ldc >= m), B k x n with element (q, c) at B[q incb + c ldb] (incb 1: column-major; the P2M
/// reads one component of the strengths' (x, y, z, 0) quadruples with incb 4); C is written, or
/// with `add` added to (C += A B, the product's sum added last).  Each element is a sum over k in
/// a fixed order (repeatable; not the host's order: round-off).  Asynchronous on stream s.
void dgemm_gpu(int m, int n, int k, const double* A, int lda, const double* B, int incb, int ldb, double* C, int ldc,
               cudaStream_t s = 0, bool add = false);

}  // namespace vh::fmm

// VH_HD marks per-point math compiled for both host and device (CUDA), empty elsewhere.
#pragma once
#if defined(__CUDACC__)
#define VH_HD __host__ __device__
#else
#define VH_HD
#endif

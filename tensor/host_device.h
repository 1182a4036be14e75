// POSGRAD_HD marks the small functions that one source serves to both backends: g++ compiles
// them for the CPU backend and the tests, nvcc for the CUDA kernels (and the host). Philox
// (tensor/philox.h), the CUDA backend's strided indexing (tensor/cuda/strided.h) and the GPU
// fused attention's arithmetic (attention/fused/gpu/fused_gpu_math.h) use it, so a CPU test of
// those functions checks the very code a GPU runs. Deliberately nothing else here.
#pragma once

#if defined(__CUDACC__)
#define POSGRAD_HD __host__ __device__ __forceinline__
#else
#define POSGRAD_HD inline
#endif

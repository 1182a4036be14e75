// The fused attention kernels compiled for 256-bit vectors (short runs of keys: 2-D grid rows); CMakeLists.txt sets -mprefer-vector-width=256 on this file.
// Deliberately only an instantiation: the code is fused_kernels_impl.h.
// Shapes: letters of shape_legend.h.
// The lanes of fused_kernels_impl.h's vector code: 256 bits where the target has them.
#if defined(__AVX__)
#define POSGRAD_FUSED_VECTOR_BYTES 32
#else
#define POSGRAD_FUSED_VECTOR_BYTES 16
#endif
#define POSGRAD_FUSED_VARIANT narrow
#include "attention/fused/fused_kernels_impl.h"

namespace posgrad::fused_detail::narrow {

POSGRAD_INSTANTIATE_FUSED_KERNELS()

}  // namespace posgrad::fused_detail::narrow

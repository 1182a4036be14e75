// The fused attention kernels compiled for the compiler's widest vectors (long runs of keys: sequences).
// Deliberately only an instantiation: the code is fused_kernels_impl.h.
// Shapes: letters of shape_legend.h.
// The lanes of fused_kernels_impl.h's vector code: the widest the target has.
#if defined(__AVX512F__)
#define POSGRAD_FUSED_VECTOR_BYTES 64
#elif defined(__AVX__)
#define POSGRAD_FUSED_VECTOR_BYTES 32
#else
#define POSGRAD_FUSED_VECTOR_BYTES 16
#endif
#define POSGRAD_FUSED_VARIANT wide
#include "attention/fused/fused_kernels_impl.h"

namespace posgrad::fused_detail::wide {

POSGRAD_INSTANTIATE_FUSED_KERNELS()

}  // namespace posgrad::fused_detail::wide

// The fused attention kernels compiled for the compiler's widest vectors (long runs of keys: sequences).
// Deliberately only an instantiation: the code is fused_kernels_impl.h.
// Shapes: letters of shape_legend.h.
#define POSGRAD_FUSED_VARIANT wide
#include "attention/fused/fused_kernels_impl.h"

namespace posgrad::fused_detail::wide {

template void forward<float>(const Problem&, const Tables<float>&, const float*, const float*, const float*, float*,
                             float*, float*);
template void forward<double>(const Problem&, const Tables<double>&, const double*, const double*, const double*,
                              double*, double*, double*);
template void backward<float>(const Problem&, const Tables<float>&, const float*, const float*, const float*,
                              const float*, const float*, const float*, const Grads<float>&);
template void backward<double>(const Problem&, const Tables<double>&, const double*, const double*, const double*,
                               const double*, const double*, const double*, const Grads<double>&);

}  // namespace posgrad::fused_detail::wide

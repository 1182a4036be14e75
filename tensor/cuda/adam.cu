// The fused Adam/AdamW kernel: one pass over p, g, m, v (and vmax) per parameter, the same
// formula and operation order as the CPU loop in nn/adam.cpp (see nn/adam.h). Scalar
// coefficients arrive in double and are rounded to the parameter's dtype once. nvcc may contract
// a multiply and an add into an FMA where the CPU rounds twice, so results agree with the CPU to
// a few ulp, not bit for bit. Deliberately not here: multi-tensor (foreach) launches.
#include "tensor/cuda/device_utils.cuh"

namespace posgrad::cuda {

namespace {

template <typename T, bool kDecoupled, bool kL2, bool kAmsgrad>
__global__ void adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                            T* __restrict__ v, T* __restrict__ vmax, int64_t n, T beta1, T omb1,
                            T beta2, T omb2, T wd, T decay, T eps, T neg_step, T bias2_sqrt) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    T pi = p[i];
    if constexpr (kDecoupled) pi = pi * decay;
    T gi = g[i];
    if constexpr (kL2) gi = gi + wd * pi;
    const T mi = m[i] * beta1 + omb1 * gi;
    const T vi = v[i] * beta2 + omb2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    T vv = vi;
    if constexpr (kAmsgrad) {
      vv = vmax[i] > vi ? vmax[i] : vi;
      vmax[i] = vv;
    }
    const T denom = Math<T>::sqrt(vv) / bias2_sqrt + eps;
    p[i] = pi + neg_step * mi / denom;
  }
}

template <typename T, bool kDecoupled, bool kL2, bool kAmsgrad>
void run(void* param, const void* grad, void* m, void* v, void* vmax, int64_t n,
         const AdamCoefficients& k, cudaStream_t stream) {
  adam_kernel<T, kDecoupled, kL2, kAmsgrad><<<grid_for(n), kThreads, 0, stream>>>(
      static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(m), static_cast<T*>(v),
      static_cast<T*>(vmax), n, static_cast<T>(k.beta1), static_cast<T>(k.one_minus_beta1),
      static_cast<T>(k.beta2), static_cast<T>(k.one_minus_beta2), static_cast<T>(k.weight_decay),
      static_cast<T>(k.decay), static_cast<T>(k.eps), static_cast<T>(k.neg_step_size),
      static_cast<T>(k.bias2_sqrt));
}

}  // namespace

void launch_adam(KType type, void* param, const void* grad, void* m, void* v, void* vmax,
                 int64_t n, const AdamCoefficients& k, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    // Six instantiations per dtype keep the loop branch-free, as on the CPU.
    if (k.decoupled) {
      if (k.amsgrad) run<T, true, false, true>(param, grad, m, v, vmax, n, k, stream);
      else run<T, true, false, false>(param, grad, m, v, vmax, n, k, stream);
    } else if (k.l2) {
      if (k.amsgrad) run<T, false, true, true>(param, grad, m, v, vmax, n, k, stream);
      else run<T, false, true, false>(param, grad, m, v, vmax, n, k, stream);
    } else {
      if (k.amsgrad) run<T, false, false, true>(param, grad, m, v, vmax, n, k, stream);
      else run<T, false, false, false>(param, grad, m, v, vmax, n, k, stream);
    }
  });
  check_launch("adam_update_fused", "adam_kernel");
}

}  // namespace posgrad::cuda

// The CUDA backend's host side: each Backend primitive checks where its operands live, turns
// Tensors into pointers and coalesced strides, and queues a kernel (kernels.h) or a cuBLAS call
// on the device's stream. Copies between host and device go through cudaMemcpyAsync (the CPU
// backend does any host-side stride or dtype work). The host waits only for device-to-host
// copies, index bounds checks and int64 division by zero. Matmul: cuBLAS strided-batched GEMM
// with the transposes read off the strides; TF32 only when set_cuda_allow_tf32(true), bf16
// tensor cores on bf16-rounded copies of the operands inside an AutocastBf16 scope
// (tensor/autocast.h).
#include "tensor/cuda/cuda_backend.h"

#include <algorithm>
#include <array>
#include <climits>
#include <memory>

#include "tensor/autocast.h"
#include "tensor/cuda/allocator.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/gemm_plan.h"
#include "tensor/cuda/kernels.h"
#include "tensor/cuda/runtime.h"
#include "tensor/device.h"

namespace posgrad::cuda {

// The kernels' dtype codes must follow the front-end's enum.
static_assert(static_cast<int>(DType::Float32) == static_cast<int>(KType::F32) &&
              static_cast<int>(DType::Float64) == static_cast<int>(KType::F64) &&
              static_cast<int>(DType::Int64) == static_cast<int>(KType::I64));

namespace {

KType ktype(const Tensor& t) { return static_cast<KType>(static_cast<int>(t.dtype())); }

// Every operand of a CUDA primitive must live on the primitive's device.
void check_on(const Tensor& t, Device device, const char* op, const char* what) {
  if (!t.defined()) fail("{}: {} is undefined", op, what);
  if (t.device() != device)
    fail("{}: {} is {} but the operation runs on {} (move it with .to(device) first)", op, what,
         t.describe(), device.str());
}

DeviceContext& ctx_of(const Tensor& t) { return context(t.device().index); }

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel() * dtype_size(t.dtype())); }

// dst <- src on one device (any strides, any dtypes).
void device_copy(const Tensor& src, Tensor& dst, DeviceContext& ctx) {
  if (dst.numel() == 0) return;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    POSGRAD_CUDA_CHECK("copy", cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes(dst),
                                               cudaMemcpyDeviceToDevice, ctx.stream));
    return;
  }
  const auto s = make_strided<2>(dst.shape(), {src.strides(), dst.strides()}, "copy");
  launch_copy(ktype(dst), dst.raw_data(), ktype(src), src.raw_data(), s, ctx.stream);
}

// Sentinel written by cudaMemsetAsync(ptr, 0x7f, 8): no bad index found.
constexpr int64_t kNoBadIndex = 0x7f7f7f7f7f7f7f7fLL;

// Checks every index in [0, n) on the device; one small read-back (a synchronisation).
void check_indices(const Tensor& index, int64_t n, const char* op, DeviceContext& ctx) {
  if (index.numel() == 0) return;
  DeviceScratch first_bad(sizeof(int64_t), ctx.index);
  POSGRAD_CUDA_CHECK(op, cudaMemsetAsync(first_bad.as<int64_t>(), 0x7f, sizeof(int64_t), ctx.stream));
  const int64_t* idx = index.data<int64_t>();
  launch_check_indices(idx, index.numel(), n, first_bad.as<int64_t>(), ctx.stream);
  const int64_t pos = read_int64(ctx, first_bad.as<int64_t>(), op);
  if (pos != kNoBadIndex) {
    const int64_t bad = read_int64(ctx, idx + pos, op);
    fail("{}: index {} is out of range [0, {})", op, bad, n);
  }
}

int to_int(int64_t v, const char* what) {
  if (v > INT_MAX) fail("matmul: {} = {} exceeds cuBLAS's 32-bit limit", what, v);
  return static_cast<int>(v);
}

}  // namespace

// ------------------------------------------------------------ copies and elementwise

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  if (src.shape() != dst.shape()) fail("copy: shapes differ ({} -> {})", src.describe(), dst.describe());
  if (dst.numel() == 0) return;
  const bool src_gpu = src.device().is_cuda(), dst_gpu = dst.device().is_cuda();
  if (src_gpu && dst_gpu && src.device() == dst.device()) {
    device_copy(src, dst, ctx_of(dst));
    return;
  }
  if (src_gpu && dst_gpu) {
    // Between GPUs: a contiguous copy of src, moved with a peer copy on the destination's
    // stream, then converted in place. Waits at the end so src's blocks are not reused early.
    const Tensor s = src.contiguous();
    sync_stream(ctx_of(s), "copy");
    DeviceContext& dctx = ctx_of(dst);
    Tensor staged = Tensor::empty(s.shape(), s.dtype(), dst.device());
    POSGRAD_CUDA_CHECK("copy", cudaMemcpyPeerAsync(staged.raw_data(), dst.device().index, s.raw_data(),
                                                   s.device().index, nbytes(s), dctx.stream));
    device_copy(staged, dst, dctx);
    sync_stream(dctx, "copy");
    return;
  }
  if (dst_gpu) {
    // Host -> device. The CPU backend makes a contiguous host buffer of dst's dtype when needed.
    Tensor host = src;
    if (!host.is_contiguous() || host.dtype() != dst.dtype()) {
      host = Tensor::empty(src.shape(), dst.dtype(), kCPU);
      cpu_backend().copy(src, host);
    }
    DeviceContext& ctx = ctx_of(dst);
    Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
    // From pageable memory the call returns once `host` has been staged, so it may be freed.
    POSGRAD_CUDA_CHECK("copy", cudaMemcpyAsync(target.raw_data(), host.raw_data(), nbytes(host),
                                               cudaMemcpyHostToDevice, ctx.stream));
    if (target.storage() != dst.storage()) device_copy(target, dst, ctx);
    return;
  }
  // Device -> host: the host needs the data, so this waits.
  DeviceContext& ctx = ctx_of(src);
  Tensor s = src;
  if (!s.is_contiguous()) {
    s = Tensor::empty(src.shape(), src.dtype(), src.device());
    device_copy(src, s, ctx);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == s.dtype();
  Tensor host = direct ? dst : Tensor::empty(s.shape(), s.dtype(), kCPU);
  POSGRAD_CUDA_CHECK("copy", cudaMemcpyAsync(host.raw_data(), s.raw_data(), nbytes(s),
                                             cudaMemcpyDeviceToHost, ctx.stream));
  sync_stream(ctx, "copy");
  if (!direct) cpu_backend().copy(host, dst);
}

void CudaBackend::fill(Tensor& dst, double value) {
  if (!dst.is_contiguous()) fail("fill: destination must be contiguous, got {}", dst.describe());
  launch_fill(ktype(dst), dst.raw_data(), dst.numel(), value, ctx_of(dst).stream);
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, Tensor& out, double p, double q) {
  check_on(x, out.device(), "unary", "the input");
  const auto s = make_strided<2>(out.shape(), {x.strides(), out.strides()}, "unary");
  launch_unary(ktype(out), op, x.raw_data(), out.raw_data(), s, p, q,
               ctx_of(out).stream);
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  check_on(a, out.device(), "binary", "the first operand");
  check_on(b, out.device(), "binary", "the second operand");
  if (out.numel() == 0) return;
  DeviceContext& ctx = ctx_of(out);
  const auto s = make_strided<3>(out.shape(), {a.strides(), b.strides(), out.strides()}, "binary");
  if (op == BinaryOp::Div && out.dtype() == kInt64) {
    DeviceScratch flag(sizeof(int64_t), ctx.index);
    POSGRAD_CUDA_CHECK("div", cudaMemsetAsync(flag.as<int64_t>(), 0, sizeof(int64_t), ctx.stream));
    launch_binary(ktype(out), BinaryOp::Div, a.raw_data(), b.raw_data(), out.raw_data(), s,
                  flag.as<int64_t>(), ctx.stream);
    if (read_int64(ctx, flag.as<int64_t>(), "div") != 0) fail("div: integer division by zero");
    return;
  }
  launch_binary(ktype(out), op, a.raw_data(), b.raw_data(), out.raw_data(), s,
                nullptr, ctx.stream);
}

void CudaBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  check_on(cond, out.device(), "where", "the condition");
  check_on(a, out.device(), "where", "the first choice");
  check_on(b, out.device(), "where", "the second choice");
  const auto s = make_strided<4>(out.shape(), {cond.strides(), a.strides(), b.strides(), out.strides()},
                                 "where");
  launch_where(ktype(out), ktype(cond), cond.raw_data(), a.raw_data(), b.raw_data(), out.raw_data(),
               s, ctx_of(out).stream);
}

void CudaBackend::accumulate(Tensor& dst, const Tensor& src) {
  check_on(src, dst.device(), "add_", "the source");
  const auto s = make_strided<2>(dst.shape(), {src.strides(), dst.strides()}, "add_");
  launch_accumulate(ktype(dst), dst.raw_data(), src.raw_data(), s, ctx_of(dst).stream);
}

// ------------------------------------------------------------ reductions

void CudaBackend::reduce_rows(ReduceOp op, const Tensor& x, Tensor& out, int64_t correction) {
  check_on(x, out.device(), "reduce", "the input");
  DeviceContext& ctx = ctx_of(out);
  launch_reduce_rows(ktype(x), op, x.raw_data(), out.raw_data(), x.size(0),
                     x.size(1), correction, ctx.index, ctx.stream);
}

void CudaBackend::argmax_rows(const Tensor& x, Tensor& out) {
  check_on(x, out.device(), "argmax", "the input");
  launch_argmax_rows(ktype(x), x.raw_data(), out.data<int64_t>(), x.size(0), x.size(1),
                     ctx_of(out).stream);
}

// ------------------------------------------------------------ matmul (cuBLAS)

void CudaBackend::matmul(const Tensor& a_in, const Tensor& b_in, Tensor& out) {
  check_on(a_in, out.device(), "matmul", "the left operand");
  check_on(b_in, out.device(), "matmul", "the right operand");
  Tensor a = a_in, b = b_in;
  const MatrixLayout la = gemm_operand(a), lb = gemm_operand(b);
  const int64_t batch = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  if (batch == 0 || M == 0 || N == 0) return;
  DeviceContext& ctx = ctx_of(out);
  if (K == 0) {  // an empty sum: zeros
    launch_fill(ktype(out), out.raw_data(), out.numel(), 0.0, ctx.stream);
    return;
  }
  // cuBLAS's A is posgrad's b and its B is posgrad's a (column-major trick, gemm_plan.h).
  const GemmPlan p = plan_gemm(la, lb, batch, M, K, N, a.stride(0), b.stride(0));
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = to_int(p.m, "N"), n = to_int(p.n, "M"), k = to_int(p.k, "K");
  const int lda = to_int(p.lda, "the leading dimension of b"), ldb = to_int(p.ldb, "the leading dimension of a");
  const int ldc = to_int(p.ldc, "N"), count = to_int(p.batch, "the batch");
  const long long stride_a = p.stride_a, stride_b = p.stride_b, stride_c = p.stride_c;
  cublasHandle_t handle = cublas_handle(ctx);
  if (a.dtype() == kFloat32 && autocast_bf16()) {
    // bf16 autocast (tensor/autocast.h): each operand's memory, as the GEMM reads it (same strides),
    // rounded to bf16 into scratch, then bf16 tensor cores with float32 sums and a float32 result.
    const float alpha = 1.0f, beta = 0.0f;
    const auto rounded = [&](const Tensor& t) {
      int64_t extent = 1;  // elements from the first to the last one the GEMM reads
      for (int d = 0; d < 3; ++d) extent += (t.size(d) - 1) * t.stride(d);
      auto copy = std::make_unique<DeviceScratch>(static_cast<size_t>(extent) * 2, ctx.index);
      launch_round_to_bf16(t.data<float>(), copy->as<void>(), extent, ctx.stream);
      return copy;
    };
    const auto a16 = rounded(a), b16 = rounded(b);
    POSGRAD_CUBLAS_CHECK("matmul", cublasGemmStridedBatchedEx(
        handle, op_a, op_b, m, n, k, &alpha, b16->as<void>(), CUDA_R_16BF, lda, stride_a, a16->as<void>(),
        CUDA_R_16BF, ldb, stride_b, &beta, out.raw_data(), CUDA_R_32F, ldc, stride_c, count,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if (a.dtype() == kFloat32) {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasComputeType_t compute = cuda_allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    POSGRAD_CUBLAS_CHECK("matmul", cublasGemmStridedBatchedEx(
        handle, op_a, op_b, m, n, k, &alpha, b.raw_data(), CUDA_R_32F, lda, stride_a, a.raw_data(),
        CUDA_R_32F, ldb, stride_b, &beta, out.raw_data(), CUDA_R_32F, ldc, stride_c, count, compute,
        CUBLAS_GEMM_DEFAULT));
  } else if (a.dtype() == kFloat64) {
    const double alpha = 1.0, beta = 0.0;
    POSGRAD_CUBLAS_CHECK("matmul", cublasGemmStridedBatchedEx(
        handle, op_a, op_b, m, n, k, &alpha, b.raw_data(), CUDA_R_64F, lda, stride_a, a.raw_data(),
        CUDA_R_64F, ldb, stride_b, &beta, out.raw_data(), CUDA_R_64F, ldc, stride_c, count,
        CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
  } else {
    fail("matmul: floating-point tensors required, got {}", a.describe());
  }
}

// ------------------------------------------------------------ softmax, layer norm

void CudaBackend::softmax_rows(const Tensor& x, Tensor& out, bool log) {
  check_on(x, out.device(), log ? "log_softmax" : "softmax", "the input");
  launch_softmax_rows(ktype(x), x.raw_data(), out.raw_data(), x.size(0), x.size(1), log,
                      ctx_of(out).stream);
}

void CudaBackend::softmax_backward_rows(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  check_on(y, dx.device(), "softmax_backward", "the output");
  check_on(dy, dx.device(), "softmax_backward", "the output gradient");
  launch_softmax_backward_rows(ktype(y), y.raw_data(), dy.raw_data(), dx.raw_data(), y.size(0),
                               y.size(1), log, ctx_of(dx).stream);
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                             Tensor& y, Tensor& mean, Tensor& rstd) {
  check_on(x, y.device(), "layer_norm", "the input");
  if (weight.defined()) check_on(weight, y.device(), "layer_norm", "the weight");
  if (bias.defined()) check_on(bias, y.device(), "layer_norm", "the bias");
  launch_layer_norm(ktype(x), x.raw_data(), weight.defined() ? weight.raw_data() : nullptr,
                    bias.defined() ? bias.raw_data() : nullptr, eps, y.raw_data(), mean.raw_data(),
                    rstd.raw_data(), x.size(0), x.size(1), ctx_of(y).stream);
}

void CudaBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                      const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                      Tensor& dweight, Tensor& dbias) {
  const Device d = dx.device();
  check_on(dy, d, "layer_norm_backward", "the output gradient");
  check_on(x, d, "layer_norm_backward", "the input");
  check_on(mean, d, "layer_norm_backward", "the saved mean");
  check_on(rstd, d, "layer_norm_backward", "the saved rstd");
  if (weight.defined()) check_on(weight, d, "layer_norm_backward", "the weight");
  DeviceContext& ctx = ctx_of(dx);
  launch_layer_norm_backward(ktype(x), dy.raw_data(), x.raw_data(),
                             weight.defined() ? weight.raw_data() : nullptr, mean.raw_data(),
                             rstd.raw_data(), dx.raw_data(),
                             weight.defined() ? dweight.raw_data() : nullptr,
                             weight.defined() ? dbias.raw_data() : nullptr, x.size(0), x.size(1),
                             ctx.index, ctx.stream);
}

// ------------------------------------------------------------ sliding 2-D windows

void CudaBackend::im2col(const Tensor& x, const Window2d& window, Tensor& cols) {
  check_on(x, cols.device(), "im2col", "the input");
  launch_im2col(ktype(x), x.raw_data(), cols.raw_data(), x.size(0), window, ctx_of(cols).stream);
}

void CudaBackend::col2im(const Tensor& cols, const Window2d& window, Tensor& x) {
  check_on(cols, x.device(), "col2im", "the columns");
  launch_col2im(ktype(x), cols.raw_data(), x.raw_data(), x.size(0), window, ctx_of(x).stream);
}

void CudaBackend::max_pool2d(const Tensor& x, const Window2d& window, Tensor& out, Tensor& argmax) {
  check_on(x, out.device(), "max_pool2d", "the input");
  launch_max_pool2d(ktype(x), x.raw_data(), out.raw_data(), argmax.data<int64_t>(), x.size(0), window,
                    ctx_of(out).stream);
}

// ------------------------------------------------------------ indexing

void CudaBackend::index_select(const Tensor& x, const Tensor& index, Tensor& out) {
  check_on(x, out.device(), "index_select", "the input");
  check_on(index, out.device(), "index_select", "the index");
  DeviceContext& ctx = ctx_of(out);
  check_indices(index, x.size(1), "index_select", ctx);
  launch_index_select(ktype(x), x.raw_data(), index.data<int64_t>(), out.raw_data(), x.size(0),
                      x.size(1), x.size(2), index.size(0), ctx.stream);
}

void CudaBackend::index_add(const Tensor& index, const Tensor& src, Tensor& out) {
  check_on(src, out.device(), "index_add", "the source");
  check_on(index, out.device(), "index_add", "the index");
  DeviceContext& ctx = ctx_of(out);
  check_indices(index, out.size(1), "index_add", ctx);
  launch_index_add(ktype(out), index.data<int64_t>(), src.raw_data(), out.raw_data(), out.size(0),
                   out.size(1), out.size(2), index.size(0), ctx.stream);
}

void CudaBackend::gather(const Tensor& x, const Tensor& index, Tensor& out) {
  check_on(x, out.device(), "gather", "the input");
  check_on(index, out.device(), "gather", "the index");
  DeviceContext& ctx = ctx_of(out);
  check_indices(index, x.size(1), "gather", ctx);
  launch_gather(ktype(x), x.raw_data(), index.data<int64_t>(), out.raw_data(), x.size(0), x.size(1),
                x.size(2), index.size(1), ctx.stream);
}

void CudaBackend::scatter_add(const Tensor& index, const Tensor& src, Tensor& out) {
  check_on(src, out.device(), "scatter_add", "the source");
  check_on(index, out.device(), "scatter_add", "the index");
  DeviceContext& ctx = ctx_of(out);
  check_indices(index, out.size(1), "scatter_add", ctx);
  launch_scatter_add(ktype(out), index.data<int64_t>(), src.raw_data(), out.raw_data(), out.size(0),
                     out.size(1), out.size(2), index.size(1), ctx.stream);
}

// ------------------------------------------------------------ random

void CudaBackend::random(RandomKind kind, Tensor& out, double a, double b, uint64_t seed,
                         uint64_t offset) {
  if (!is_floating(out.dtype())) fail("random: floating-point dtype required, got {}", out.describe());
  launch_random(ktype(out), kind, out.raw_data(), out.numel(), a, b, seed,
                offset, ctx_of(out).stream);
}

// ------------------------------------------------------------ fused Adam (runtime.h)

void adam_update(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                 const AdamUpdate& k) {
  const char* op = "adam_update_fused";
  const Device d = param.device();
  check_on(grad, d, op, "the gradient");
  check_on(m, d, op, "the first moment m");
  check_on(v, d, op, "the second moment v");
  if (k.amsgrad) check_on(vmax, d, op, "the amsgrad maximum vmax");
  for (const Tensor* t : {&param, &m, &v})
    if (!t->is_contiguous()) fail("{}: {} must be contiguous", op, t->describe());
  if (k.amsgrad && !vmax.is_contiguous()) fail("{}: {} must be contiguous", op, vmax.describe());
  const Tensor g = grad.contiguous();
  const AdamCoefficients c{k.beta1, k.one_minus_beta1, k.beta2, k.one_minus_beta2, k.eps,
                           k.weight_decay, k.decay, k.neg_step_size, k.bias2_sqrt,
                           k.decoupled, k.l2, k.amsgrad};
  launch_adam(ktype(param), param.raw_data(), g.raw_data(), m.raw_data(), v.raw_data(),
              k.amsgrad ? vmax.raw_data() : nullptr, param.numel(), c, ctx_of(param).stream);
}

}  // namespace posgrad::cuda

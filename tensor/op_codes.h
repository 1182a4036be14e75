// The op codes that cross from the op front-end (tensor/ops.h) to a backend (tensor/backend.h)
// and on into the CUDA kernels: plain enums with no dependencies, so the .cu files include them
// as they are and no second copy of the lists can drift out of order.
#pragma once

namespace posgrad {

enum class UnaryOp {
  Neg, Exp, Log, Sqrt, Rsqrt, Abs, Sign, Sin, Cos, Tanh, Sigmoid, Relu, Gelu, Square, Reciprocal,
  // parametrised: AddScalar(p), MulScalar(p), PowScalar(p), Clamp(p=min, q=max); GeluGrad and
  // ReluMask are the derivatives autograd needs
  AddScalar, MulScalar, PowScalar, Clamp, GeluGrad, ReluMask
};
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };
enum class ReduceOp { Sum, Mean, Max, Min, Var };
enum class RandomKind { Uniform, Normal, Bernoulli };

}  // namespace posgrad

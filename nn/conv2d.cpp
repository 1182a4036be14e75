// Conv2d and MaxPool2d modules (see conv2d.h).
// Shapes: tensor/conv.h's letters.
#include "nn/conv2d.h"

#include <cmath>

#include "autograd/functions.h"
#include "nn/init.h"

namespace posgrad {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel, const Conv2dOptions& options,
               bool bias, Generator& gen)
    : in_(in_channels), out_(out_channels), options_(options) {
  if (in_channels < 1 || out_channels < 1 || kernel[0] < 1 || kernel[1] < 1 || options.groups < 1)
    fail("Conv2d: channels, kernel and groups must be >= 1, got in={} out={} kernel=({}, {}) groups={}", in_channels,
         out_channels, kernel[0], kernel[1], options.groups);
  if (in_channels % options.groups != 0 || out_channels % options.groups != 0)
    fail("Conv2d({} -> {}): both channel counts must be divisible by groups {}", in_channels, out_channels,
         options.groups);
  Tensor w = Tensor::empty({out_channels, in_channels / options.groups, kernel[0], kernel[1]});
  init::kaiming_uniform_(w, gen, std::sqrt(5.0));
  weight_ = register_parameter("weight", w);
  if (bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(w.numel() / out_channels));
    Tensor b = Tensor::empty({out_channels});
    init::uniform_(b, -bound, bound, gen);
    bias_ = register_parameter("bias", b);
  }
}

Variable Conv2d::forward(const Variable& x) {
  try {
    return conv2d(x, weight_, bias_, options_);
  } catch (const Error& e) {
    fail("Conv2d({}): {}", extra_repr(), e.what());
  }
}

std::string Conv2d::extra_repr() const {
  const Conv2dOptions& o = options_;
  return fmt::format("{} -> {}, kernel=({}, {}), stride=({}, {}), padding=({}, {}), dilation=({}, {}), groups={}, bias={}",
                     in_, out_, weight_.size(2), weight_.size(3), o.stride[0], o.stride[1], o.padding[0], o.padding[1],
                     o.dilation[0], o.dilation[1], o.groups, bias_.defined());
}

Variable MaxPool2d::forward(const Variable& x) {
  try {
    return max_pool2d(x, options_);
  } catch (const Error& e) {
    fail("MaxPool2d({}): {}", extra_repr(), e.what());
  }
}

std::string MaxPool2d::extra_repr() const {
  const Pool2dOptions& o = options_;
  return fmt::format("kernel=({}, {}), stride=({}, {}), padding=({}, {})", o.kernel[0], o.kernel[1],
                     o.stride[0] ? o.stride[0] : o.kernel[0], o.stride[1] ? o.stride[1] : o.kernel[1], o.padding[0],
                     o.padding[1]);
}

}  // namespace posgrad

// Conv2d and MaxPool2d modules over [B, C, Y, X] images, as torch.nn.Conv2d / MaxPool2d (the
// weight [Co, C/G, kh, kw] and bias [Co] port between the two). Default init is PyTorch's:
// weight kaiming_uniform with a = sqrt(5), i.e. U(+-1/sqrt(fan_in)), bias U(+-1/sqrt(fan_in)),
// fan_in = C/G * kh * kw; models re-initialise with nn/init.h when their recipe says otherwise.
// The op and its errors (kernel larger than the padded input, channels not divisible by the
// groups, ...) are tensor/conv.h's; the module prefixes them with its own settings.
// Deliberately not here: other convolution kinds (1-D, 3-D, transposed), average pooling.
// Shapes: tensor/conv.h's letters (Y, X, Co, G).
#pragma once

#include "nn/module.h"
#include "tensor/conv.h"
#include "tensor/random.h"

namespace posgrad {

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel, const Conv2dOptions& options,
         bool bias, Generator& gen);

  Variable forward(const Variable& x) override;  // [B, C, Y, X] -> [B, Co, Yo, Xo]

  const Variable& weight() const { return weight_; }  // [Co, C/G, kh, kw]
  const Variable& bias() const { return bias_; }      // [Co], undefined without bias
  const Conv2dOptions& options() const { return options_; }
  std::string extra_repr() const override;

 private:
  int64_t in_, out_;
  Conv2dOptions options_;
  Variable weight_, bias_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const Pool2dOptions& options) : options_(options) {}
  Variable forward(const Variable& x) override;  // [B, C, Y, X] -> [B, C, Yo, Xo]
  const Pool2dOptions& options() const { return options_; }
  std::string extra_repr() const override;

 private:
  Pool2dOptions options_;
};

}  // namespace posgrad

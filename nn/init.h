// Parameter initialisation, with PyTorch's formulas (torch.nn.init), so that a posgrad model
// starts from the same distributions as its PyTorch twin. Every function fills a Tensor in place
// and returns it. Tensor is a handle: the writes go to its storage, so passing a view (a slice of
// a weight) initialises that part of the parameter. Random fills take the Generator explicitly
// (Philox; there is no global generator), so runs are reproducible from one seed.
//
// Deliberately not here: choosing an init for a layer (each layer does that in its constructor),
// orthogonal/SIREN schemes (their own layers), and any gradient recording (these are plain
// tensor writes; call them on parameter.mutable_value()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tensor/ops.h"

namespace posgrad::init {

// ------------------------------------------------------------ fans and gains
struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};
// As torch.nn.init._calculate_fan_in_and_fan_out: for a weight [out, in, k1, k2, ...]
// fan_in = in * k1 * k2 * ..., fan_out = out * k1 * k2 * .... Fewer than 2 axes is an Error.
Fans fan_in_and_fan_out(const Shape& shape);

// As torch.nn.init.calculate_gain: linear, conv1d/2d/3d, sigmoid -> 1; tanh -> 5/3;
// relu -> sqrt(2); leaky_relu -> sqrt(2 / (1 + slope^2)) (slope = param, default 0.01);
// selu -> 3/4. Anything else is an Error listing the valid names.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);

enum class FanMode { FanIn, FanOut };

// ------------------------------------------------------------ fills
Tensor uniform_(Tensor t, double lo, double hi, Generator& gen);          // U(lo, hi)
Tensor normal_(Tensor t, double mean, double stddev, Generator& gen);     // N(mean, stddev^2)
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);

// Glorot: std = gain * sqrt(2 / (fan_in + fan_out)); uniform bound = sqrt(3) * std.
Tensor xavier_uniform_(Tensor t, Generator& gen, double gain = 1.0);
Tensor xavier_normal_(Tensor t, Generator& gen, double gain = 1.0);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan); uniform bound = sqrt(3) * std.
// Defaults as PyTorch's (a = 0, fan_in, leaky_relu -> gain sqrt(2)).
// nn.Linear's default weight init is kaiming_uniform_(w, gen, sqrt(5)), i.e. U(+-1/sqrt(in)).
Tensor kaiming_uniform_(Tensor t, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(Tensor t, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                       const std::string& nonlinearity = "leaky_relu");

}  // namespace posgrad::init

// AutoAugment's CIFAR-10 policy (Cubuk et al., "AutoAugment: Learning Augmentation Policies from
// Data", CVPR 2019): 25 sub-policies of two operations, each applied with its probability at its
// magnitude bin 0..9; one sub-policy is drawn uniformly per image. The table is the published
// one (the paper's appendix, as in torchvision's AutoAugmentPolicy.CIFAR10).
//
// Each operation is a deterministic function of the image and a signed magnitude value, written
// from the definitions PIL gives them (ops on 8-bit RGB):
//   ShearX/Y(m)       affine shear, x' = x + m y (resp. y' = y + m x), m in +-[0, 0.3]
//   TranslateX/Y(t)   shift by t pixels, |t| in [0, 150/331 * size]
//   Rotate(d)         d degrees counter-clockwise about the centre, |d| in [0, 30]
//   Color/Contrast/Brightness/Sharpness(f)   blend with a degenerate image:
//                     out = clip(deg + f (img - deg)) truncated to 8 bits, f = 1 + [-0.9, 0.9];
//                     deg = greyscale (Color), the mean grey level (Contrast), black
//                     (Brightness), the 3x3 smoothing [[1,1,1],[1,5,1],[1,1,1]] / 13 with the
//                     border kept (Sharpness)
//   Posterize(b)      keep the top b bits, b = round(8 - 4 bin / 9)
//   Solarize(t)       invert pixels >= t, t = 256 - 256 bin / 9
//   AutoContrast      per channel, stretch [min, max] to [0, 255] (truncated)
//   Equalize          per channel histogram equalisation (PIL's ImageOps.equalize)
//   Invert            255 - x
// Grey level L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 (PIL's RGB -> L).
// Geometric operations sample the nearest pixel (the pixel centre mapped back and floored; the
// default of torchvision's AutoAugment) and fill uncovered pixels with grey 128. The magnitude's
// sign is drawn with probability 1/2 for the operations that have one.
// Deliberately not here: the ImageNet and SVHN policies, RandAugment, bicubic resampling.
// Local letters: Y, X rows and columns of the image.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "datasets/byte_image.h"
#include "tensor/random.h"

namespace posgrad {

enum class AugmentOp {
  ShearX, ShearY, TranslateX, TranslateY, Rotate, Color, Posterize, Solarize, Contrast, Sharpness,
  Brightness, AutoContrast, Equalize, Invert,
};
std::string augment_op_name(AugmentOp op);

// One operation at a signed magnitude value (as listed above: a shear factor, pixels, degrees,
// an enhance factor f, bits, a threshold; ignored by AutoContrast, Equalize and Invert).
ByteImage apply_augment_op(const ByteImage& image, AugmentOp op, double value);
// The value of magnitude bin 0..9 (unsigned; the caller draws the sign), for an image of `size`
// pixels along the translated axis.
double augment_magnitude(AugmentOp op, int64_t bin, int64_t size);
bool augment_op_is_signed(AugmentOp op);

struct SubPolicyStep {
  AugmentOp op;
  double probability;
  int64_t bin;  // magnitude bin 0..9
};
using SubPolicy = std::array<SubPolicyStep, 2>;
const std::vector<SubPolicy>& cifar10_policy();  // the 25 sub-policies

// One draw of the policy for one image: a sub-policy, then for each step a Bernoulli(probability)
// and a sign, all from `gen`.
ByteImage apply_cifar10_policy(const ByteImage& image, Generator& gen);

}  // namespace posgrad

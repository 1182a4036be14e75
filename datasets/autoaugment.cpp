// AutoAugment's CIFAR-10 policy and its operations (see autoaugment.h).
// Local letters: Y, X rows and columns of the image.
#include "datasets/autoaugment.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"

namespace posgrad {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr uint8_t kFill = 128;

uint8_t clip_truncate(double v) {
  if (v <= 0.0) return 0;
  if (v >= 255.0) return 255;
  return static_cast<uint8_t>(v);
}

uint8_t grey(const ByteImage& im, int64_t y, int64_t x) {
  if (im.channels == 1) return im.at(0, y, x);
  return static_cast<uint8_t>((im.at(0, y, x) * 19595 + im.at(1, y, x) * 38470 + im.at(2, y, x) * 7471 + 0x8000) >> 16);
}

// out(x, y) = in(floor(a (x + .5) + b (y + .5) + c), floor(d (x + .5) + e (y + .5) + f)), or grey.
ByteImage affine(const ByteImage& im, double a, double b, double c, double d, double e, double f) {
  ByteImage out(im.channels, im.height, im.width);
  for (int64_t y = 0; y < im.height; ++y)
    for (int64_t x = 0; x < im.width; ++x) {
      const double px = x + 0.5, py = y + 0.5;
      const double sx = std::floor(a * px + b * py + c), sy = std::floor(d * px + e * py + f);
      const bool inside = sx >= 0 && sx < im.width && sy >= 0 && sy < im.height;
      for (int64_t ch = 0; ch < im.channels; ++ch)
        out.at(ch, y, x) = inside ? im.at(ch, static_cast<int64_t>(sy), static_cast<int64_t>(sx)) : kFill;
    }
  return out;
}

// clip(deg + f (im - deg)), truncated.
ByteImage blend(const ByteImage& degenerate, const ByteImage& im, double f) {
  ByteImage out(im.channels, im.height, im.width);
  for (size_t i = 0; i < im.pixels.size(); ++i)
    out.pixels[i] = clip_truncate(degenerate.pixels[i] + f * (static_cast<double>(im.pixels[i]) - degenerate.pixels[i]));
  return out;
}

template <typename Lut>
ByteImage per_channel_lut(const ByteImage& im, Lut make_lut) {
  ByteImage out = im;
  const int64_t plane = im.height * im.width;
  for (int64_t c = 0; c < im.channels; ++c) {
    std::array<int64_t, 256> histogram{};
    for (int64_t i = 0; i < plane; ++i) ++histogram[im.pixels[c * plane + i]];
    const std::array<uint8_t, 256> lut = make_lut(histogram);
    for (int64_t i = 0; i < plane; ++i) out.pixels[c * plane + i] = lut[im.pixels[c * plane + i]];
  }
  return out;
}

std::array<uint8_t, 256> identity_lut() {
  std::array<uint8_t, 256> lut{};
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i);
  return lut;
}

ByteImage auto_contrast(const ByteImage& im) {
  return per_channel_lut(im, [](const std::array<int64_t, 256>& h) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[lo] == 0) ++lo;
    while (hi >= 0 && h[hi] == 0) --hi;
    if (hi <= lo) return identity_lut();
    const double scale = 255.0 / (hi - lo), offset = -lo * scale;
    std::array<uint8_t, 256> lut{};
    for (int i = 0; i < 256; ++i) lut[i] = clip_truncate(i * scale + offset);
    return lut;
  });
}

// PIL's equalize: step = (pixels - count of the last used level) / 255; level i maps to
// (step / 2 + pixels below i) / step.
ByteImage equalize(const ByteImage& im) {
  return per_channel_lut(im, [](const std::array<int64_t, 256>& h) {
    int last = 255;
    while (last >= 0 && h[last] == 0) --last;
    int64_t total = 0, used = 0;
    for (int i = 0; i < 256; ++i) {
      total += h[i];
      used += h[i] != 0;
    }
    if (used <= 1) return identity_lut();
    const int64_t step = (total - h[last]) / 255;
    if (step == 0) return identity_lut();
    std::array<uint8_t, 256> lut{};
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      lut[i] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
      n += h[i];
    }
    return lut;
  });
}

ByteImage smooth(const ByteImage& im) {
  ByteImage out = im;
  for (int64_t c = 0; c < im.channels; ++c)
    for (int64_t y = 1; y + 1 < im.height; ++y)
      for (int64_t x = 1; x + 1 < im.width; ++x) {
        int64_t s = 4 * im.at(c, y, x);  // centre weight 5 = 1 + 4
        for (int64_t dy = -1; dy <= 1; ++dy)
          for (int64_t dx = -1; dx <= 1; ++dx) s += im.at(c, y + dy, x + dx);
        out.at(c, y, x) = static_cast<uint8_t>(std::lround(static_cast<double>(s) / 13.0));
      }
  return out;
}

}  // namespace

std::string augment_op_name(AugmentOp op) {
  static const char* names[] = {"ShearX",   "ShearY",    "TranslateX", "TranslateY",   "Rotate",   "Color",  "Posterize",
                                "Solarize", "Contrast",  "Sharpness",  "Brightness",   "AutoContrast", "Equalize", "Invert"};
  return names[static_cast<int>(op)];
}

bool augment_op_is_signed(AugmentOp op) {
  switch (op) {
    case AugmentOp::ShearX: case AugmentOp::ShearY: case AugmentOp::TranslateX: case AugmentOp::TranslateY:
    case AugmentOp::Rotate: case AugmentOp::Color: case AugmentOp::Contrast: case AugmentOp::Sharpness:
    case AugmentOp::Brightness:
      return true;
    default:
      return false;
  }
}

double augment_magnitude(AugmentOp op, int64_t bin, int64_t size) {
  if (bin < 0 || bin > 9) fail("augment_magnitude: the bin must be in 0..9, got {}", bin);
  const double t = bin / 9.0;  // np.linspace(lo, hi, 10)[bin] = lo + (hi - lo) t
  switch (op) {
    case AugmentOp::ShearX: case AugmentOp::ShearY: return 0.3 * t;
    case AugmentOp::TranslateX: case AugmentOp::TranslateY: return 150.0 / 331.0 * t * size;
    case AugmentOp::Rotate: return 30.0 * t;
    case AugmentOp::Color: case AugmentOp::Contrast: case AugmentOp::Sharpness: case AugmentOp::Brightness:
      return 0.9 * t;  // the factor is 1 +- this
    case AugmentOp::Posterize: return std::round(8.0 - 4.0 * t);  // numpy rounds halves to even; none occur
    case AugmentOp::Solarize: return 256.0 - 256.0 * t;
    default: return 0.0;
  }
}

ByteImage apply_augment_op(const ByteImage& im, AugmentOp op, double v) {
  switch (op) {
    case AugmentOp::ShearX: return affine(im, 1, v, 0, 0, 1, 0);
    case AugmentOp::ShearY: return affine(im, 1, 0, 0, v, 1, 0);
    case AugmentOp::TranslateX: return affine(im, 1, 0, v, 0, 1, 0);
    case AugmentOp::TranslateY: return affine(im, 1, 0, 0, 0, 1, v);
    case AugmentOp::Rotate: {
      // Output point p (relative to the centre) reads the input at p turned back by the angle:
      // in y-down coordinates, (x cos - y sin, x sin + y cos).
      const double r = v * kPi / 180.0, cs = std::cos(r), sn = std::sin(r);
      const double cx = im.width / 2.0, cy = im.height / 2.0;
      return affine(im, cs, -sn, cx - cs * cx + sn * cy, sn, cs, cy - sn * cx - cs * cy);
    }
    case AugmentOp::Color: {
      if (im.channels != 3) return im;
      ByteImage deg(3, im.height, im.width);
      for (int64_t y = 0; y < im.height; ++y)
        for (int64_t x = 0; x < im.width; ++x)
          for (int64_t c = 0; c < 3; ++c) deg.at(c, y, x) = grey(im, y, x);
      return blend(deg, im, v);
    }
    case AugmentOp::Contrast: {
      double s = 0;
      for (int64_t y = 0; y < im.height; ++y)
        for (int64_t x = 0; x < im.width; ++x) s += grey(im, y, x);
      const auto mean = static_cast<uint8_t>(static_cast<int64_t>(s / static_cast<double>(im.height * im.width) + 0.5));
      return blend(ByteImage(im.channels, im.height, im.width, mean), im, v);
    }
    case AugmentOp::Brightness: return blend(ByteImage(im.channels, im.height, im.width, 0), im, v);
    case AugmentOp::Sharpness: return blend(smooth(im), im, v);
    case AugmentOp::Posterize: {
      const int bits = static_cast<int>(v);
      if (bits < 0 || bits > 8) fail("Posterize: bits must be in 0..8, got {}", v);
      const auto mask = static_cast<uint8_t>(0xFF << (8 - bits));
      ByteImage out = im;
      for (uint8_t& p : out.pixels) p &= mask;
      return out;
    }
    case AugmentOp::Solarize: {
      ByteImage out = im;
      for (uint8_t& p : out.pixels) p = p < v ? p : static_cast<uint8_t>(255 - p);
      return out;
    }
    case AugmentOp::AutoContrast: return auto_contrast(im);
    case AugmentOp::Equalize: return equalize(im);
    case AugmentOp::Invert: {
      ByteImage out = im;
      for (uint8_t& p : out.pixels) p = static_cast<uint8_t>(255 - p);
      return out;
    }
  }
  fail("apply_augment_op: unknown operation");
}

const std::vector<SubPolicy>& cifar10_policy() {
  using A = AugmentOp;
  static const std::vector<SubPolicy> policy = {
      {{{A::Invert, 0.1, 7}, {A::Contrast, 0.2, 6}}},       {{{A::Rotate, 0.7, 2}, {A::TranslateX, 0.3, 9}}},
      {{{A::Sharpness, 0.8, 1}, {A::Sharpness, 0.9, 3}}},   {{{A::ShearY, 0.5, 8}, {A::TranslateY, 0.7, 9}}},
      {{{A::AutoContrast, 0.5, 8}, {A::Equalize, 0.9, 2}}}, {{{A::ShearY, 0.2, 7}, {A::Posterize, 0.3, 7}}},
      {{{A::Color, 0.4, 3}, {A::Brightness, 0.6, 7}}},      {{{A::Sharpness, 0.3, 9}, {A::Brightness, 0.7, 9}}},
      {{{A::Equalize, 0.6, 5}, {A::Equalize, 0.5, 1}}},     {{{A::Contrast, 0.6, 7}, {A::Sharpness, 0.6, 5}}},
      {{{A::Color, 0.7, 7}, {A::TranslateX, 0.5, 8}}},      {{{A::Equalize, 0.3, 7}, {A::AutoContrast, 0.4, 8}}},
      {{{A::TranslateY, 0.4, 3}, {A::Sharpness, 0.2, 6}}},  {{{A::Brightness, 0.9, 6}, {A::Color, 0.2, 8}}},
      {{{A::Solarize, 0.5, 2}, {A::Invert, 0.0, 3}}},       {{{A::Equalize, 0.2, 0}, {A::AutoContrast, 0.6, 0}}},
      {{{A::Equalize, 0.2, 8}, {A::Equalize, 0.6, 4}}},     {{{A::Color, 0.9, 9}, {A::Equalize, 0.6, 6}}},
      {{{A::AutoContrast, 0.8, 4}, {A::Solarize, 0.2, 8}}}, {{{A::Brightness, 0.1, 3}, {A::Color, 0.7, 0}}},
      {{{A::Solarize, 0.4, 5}, {A::AutoContrast, 0.9, 3}}}, {{{A::TranslateY, 0.9, 9}, {A::TranslateY, 0.7, 9}}},
      {{{A::AutoContrast, 0.9, 2}, {A::Solarize, 0.8, 3}}}, {{{A::Equalize, 0.8, 8}, {A::Invert, 0.1, 3}}},
      {{{A::TranslateY, 0.7, 9}, {A::AutoContrast, 0.9, 1}}},
  };
  return policy;
}

ByteImage apply_cifar10_policy(const ByteImage& image, Generator& gen) {
  const auto& policy = cifar10_policy();
  const auto which = std::min<size_t>(static_cast<size_t>(gen.next_uniform() * policy.size()), policy.size() - 1);
  ByteImage out = image;
  for (const SubPolicyStep& step : policy[which]) {
    const bool apply = gen.next_uniform() < step.probability;
    const bool negative = gen.next_uniform() < 0.5;  // drawn always, so the stream does not depend on `apply`
    if (!apply) continue;
    const int64_t size = step.op == AugmentOp::TranslateY ? out.height : out.width;
    double v = augment_magnitude(step.op, step.bin, size);
    if (augment_op_is_signed(step.op) && negative) v = -v;
    if (step.op == AugmentOp::Color || step.op == AugmentOp::Contrast || step.op == AugmentOp::Sharpness ||
        step.op == AugmentOp::Brightness)
      v = 1.0 + v;
    out = apply_augment_op(out, step.op, v);
  }
  return out;
}

}  // namespace posgrad

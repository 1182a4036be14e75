// Colours and colour maps: see color.h.
#include "apps/common/color.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

namespace posgrad::apps {

namespace {

// Control points, evenly spaced over [0, 1].
constexpr std::array<Color, 9> kViridis{{{68, 1, 84},
                                         {72, 40, 120},
                                         {62, 73, 137},
                                         {49, 104, 142},
                                         {38, 130, 142},
                                         {31, 158, 137},
                                         {53, 183, 121},
                                         {110, 206, 88},
                                         {253, 231, 37}}};

constexpr std::array<Color, 5> kDiverging{{{33, 102, 172},
                                           {146, 197, 222},
                                           {247, 247, 247},
                                           {244, 165, 130},
                                           {178, 24, 43}}};

constexpr std::array<Color, 2> kGrays{{{0, 0, 0}, {255, 255, 255}}};

constexpr std::array<Color, 10> kPalette{{{31, 119, 180},
                                          {255, 127, 14},
                                          {44, 160, 44},
                                          {214, 39, 40},
                                          {148, 103, 189},
                                          {140, 86, 75},
                                          {227, 119, 194},
                                          {127, 127, 127},
                                          {188, 189, 34},
                                          {23, 190, 207}}};

template <size_t N>
Color sample(const std::array<Color, N>& table, double t) {
  if (std::isnan(t)) return {128, 128, 128};
  t = std::clamp(t, 0.0, 1.0) * static_cast<double>(N - 1);
  const size_t i = std::min(static_cast<size_t>(t), N - 2);
  return mix(table[i], table[i + 1], t - static_cast<double>(i));
}

}  // namespace

Color mix(Color a, Color b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto channel = [t](uint8_t x, uint8_t y) {
    return static_cast<uint8_t>(std::lround(x + (static_cast<double>(y) - x) * t));
  };
  return {channel(a.r, b.r), channel(a.g, b.g), channel(a.b, b.b)};
}

Color colormap(Colormap map, double t) {
  switch (map) {
    case Colormap::Viridis: return sample(kViridis, t);
    case Colormap::Diverging: return sample(kDiverging, t);
    case Colormap::Grays: return sample(kGrays, t);
  }
  return sample(kViridis, t);
}

double luminance(Color c) {
  auto lin = [](uint8_t v) {
    const double x = v / 255.0;
    return x <= 0.04045 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
}

Color palette(int i) {
  const int n = static_cast<int>(kPalette.size());
  return kPalette[static_cast<size_t>(((i % n) + n) % n)];
}

std::string to_hex(Color c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

std::ostream& operator<<(std::ostream& out, Color c) { return out << to_hex(c); }

}  // namespace posgrad::apps

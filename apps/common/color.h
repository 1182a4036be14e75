// Colours for figures: an RGB triple, a few named colours, colour maps for heatmaps
// (a perceptual viridis-like map, a diverging blue-white-red map, grays) and a palette of
// distinguishable colours for line series. The maps are small tables of control points,
// interpolated linearly.
//
// Deliberately does not: do colour-space conversions, alpha, or read colour names from text.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace posgrad::apps {

struct Color {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Color&, const Color&) = default;
};

namespace colors {
inline constexpr Color white{255, 255, 255};
inline constexpr Color black{0, 0, 0};
inline constexpr Color dark_gray{64, 64, 64};
inline constexpr Color gray{128, 128, 128};
inline constexpr Color light_gray{215, 215, 215};
inline constexpr Color very_light_gray{240, 240, 240};
inline constexpr Color red{220, 20, 30};
inline constexpr Color orange{255, 140, 0};
inline constexpr Color blue{31, 100, 200};
inline constexpr Color green{30, 150, 60};
}  // namespace colors

enum class Colormap {
  Viridis,    // dark purple -> blue -> green -> yellow; perceptually ordered, for magnitudes
  Diverging,  // blue -> near white -> red; for signed values centred on 0
  Grays,      // black -> white
};

// The colour at t in [0, 1] (clamped; NaN gives mid gray).
Color colormap(Colormap map, double t);

// Linear blend: t = 0 gives a, t = 1 gives b.
Color mix(Color a, Color b, double t);

// Relative luminance in [0, 1] (to pick black or white text on a coloured cell).
double luminance(Color c);

// The i-th colour of a 10-colour qualitative palette (wraps around).
Color palette(int i);

// "#rrggbb"
std::string to_hex(Color c);
std::ostream& operator<<(std::ostream& out, Color c);  // writes to_hex(c)

}  // namespace posgrad::apps

// MaskRows (see mask_rows.h).
#include "nn/mask_rows.h"

#include "tensor/error.h"

namespace posgrad {

namespace {
thread_local const MaskRows* current = nullptr;
}  // namespace

MaskRowsScope::MaskRowsScope(MaskRows rows) : previous_(current), rows_(rows) {
  if (rows.count < 1 || rows.first < 0 || rows.global < rows.first + rows.count)
    fail("MaskRows: rows [{}, {}) are not rows of a global batch of {}", rows.first, rows.first + rows.count, rows.global);
  current = &rows_;
}

MaskRowsScope::~MaskRowsScope() { current = previous_; }

const MaskRows* current_mask_rows() { return current; }

Tensor bernoulli_for_rows(const Shape& shape, double p, Generator& gen, DType dtype, Device device, const char* what) {
  const MaskRows* rows = current;
  if (!rows) return bernoulli(shape, p, gen, dtype, device);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (shape.empty() || shape[0] % rows->count != 0)
    fail("{}: a mask of shape {} is not batch-major over the {} rows this process computes (MaskRows)", what,
         fmt::format("[{}]", fmt::join(shape, ", ")), rows->count);
  const int64_t per_row = n / rows->count;
  const auto start = static_cast<uint64_t>(rows->first * per_row);      // the first element of my rows
  const uint64_t base = gen.reserve(static_cast<uint64_t>(rows->global * per_row));  // the global draw
  Generator mine(gen.seed());
  mine.set_state(gen.seed(), base + start / 4);
  const auto lead = static_cast<int64_t>(start % 4);  // my first element's lane in its block
  const Tensor drawn = bernoulli({lead + n}, p, mine, dtype, device);
  return drawn.narrow(0, lead, n).contiguous().reshape(shape);
}

}  // namespace posgrad

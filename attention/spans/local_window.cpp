// The "local_window" span (see local_window.h).
#include "attention/spans/local_window.h"

namespace posgrad {

LocalWindow::LocalWindow(int64_t radius, bool causal) : radius_(radius), causal_(causal) {
  if (radius < 0) fail("local_window: radius must be >= 0, got {}", radius);
}

std::optional<OffsetBox> LocalWindow::key_range(const PositionPair& positions) const {
  if (positions.is_tree()) fail("local_window: needs grid or sequence positions, got {}", positions.describe());
  if (causal_ && positions.dims() != 1) fail("local_window: causal windows need 1-D positions, got {}", positions.describe());
  OffsetBox box;
  for (int64_t d = 0; d < positions.dims(); ++d) {
    box.lo.push_back(-radius_);
    box.hi.push_back(causal_ ? 0 : radius_);
  }
  return box;
}

std::string LocalWindow::summary() const {
  return fmt::format("local_window radius {}{}", radius_, causal_ ? " (causal)" : "");
}

std::shared_ptr<AttentionHook> make_local_window(const HookContext&, const HookOptions& options, Generator&) {
  return std::make_shared<LocalWindow>(options.integer("radius", 16), options.flag("causal", false));
}

}  // namespace posgrad

// The "none" scheme (see no_position.h).
#include "attention/schemes/no_position.h"

namespace posgrad {

std::shared_ptr<AttentionHook> make_no_position(const HookContext&, const HookOptions&, Generator&) {
  return std::make_shared<NoPosition>();
}

}  // namespace posgrad

// The built-in attention hooks, registered with the registry on its first use. Adding a scheme
// means one include and one register_hook line here (docs/tutorial-new-scheme.md).
#include "attention/registry.h"
#include "attention/schemes/no_position.h"
#include "attention/spans/local_window.h"

namespace posgrad {

void register_builtin_hooks() {
  register_hook("none", make_no_position, "no positional information");
  register_hook("local_window", make_local_window, "fixed sliding window of keys (radius per axis, optional causal)");
}

}  // namespace posgrad

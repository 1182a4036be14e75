// The built-in attention hooks, registered with the registry on its first use. Adding a scheme
// means one include and one register_hook line here (docs/tutorial-new-scheme.md).
#include "attention/registry.h"
#include "attention/schemes/no_position.h"
#include "attention/spans/local_window.h"
#include "attention/schemes/t5_bias.h"

namespace posgrad {

void register_builtin_hooks() {
  register_hook("none", make_no_position, "no positional information");
  register_hook("local_window", make_local_window, "fixed sliding window of keys (radius per axis, optional causal)");
  register_hook("t5_bias", make_t5_bias, "T5 bucketed relative position bias (the tutorial scheme)");
}

}  // namespace posgrad

// SingleProcessGroup: see single_process_group.h.
#include "distributed/single_process_group.h"

#include <cstdlib>

namespace posgrad::distributed {

void SingleProcessGroup::broadcast(Tensor&, int root) {
  POSGRAD_CHECK(root == 0, "broadcast from rank {} in a group of one process", root);
}

void SingleProcessGroup::broadcast(std::string&, int root) {
  POSGRAD_CHECK(root == 0, "broadcast from rank {} in a group of one process", root);
}

void SingleProcessGroup::abort(int code) { std::exit(code); }

}  // namespace posgrad::distributed

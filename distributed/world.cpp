// world() and group_for(): the process's groups, made at first use (see process_group.h).
#include <memory>

#include "distributed/launch_environment.h"
#include "distributed/process_group.h"
#include "distributed/single_process_group.h"
#include "tensor/error.h"
#ifdef POSGRAD_HAVE_MPI
#include "distributed/mpi_process_group.h"
#endif
#ifdef POSGRAD_HAVE_NCCL
#include "distributed/nccl_process_group.h"
#endif

namespace posgrad::distributed {

namespace {

// Destroyed at normal exit, after main returns: the device group first, then MPI's finalize.
struct Groups {
  std::unique_ptr<ProcessGroup> world;
  std::unique_ptr<ProcessGroup> device;
  ~Groups() {
    device.reset();
    world.reset();
  }
};

Groups& groups() {
  static Groups g;
  return g;
}

std::unique_ptr<ProcessGroup> make_world() {
  const LaunchEnvironment env = launch_environment();
  if (env.size == 1) return std::make_unique<SingleProcessGroup>();
#ifdef POSGRAD_HAVE_MPI
  return std::make_unique<MpiProcessGroup>();
#else
  fail("this process was launched as rank {} of {} (by {}), but posgrad was built without MPI: install "
       "libopenmpi-dev and openmpi-bin (scripts/install_deps.sh) and configure again",
       env.rank, env.size, env.launcher);
#endif
}

}  // namespace

ProcessGroup& world() {
  Groups& g = groups();
  if (!g.world) g.world = make_world();
  return *g.world;
}

ProcessGroup* world_if_started() { return groups().world.get(); }

ProcessGroup& group_for(Device device) {
  ProcessGroup& host = world();
#ifdef POSGRAD_HAVE_NCCL
  if (device.is_cuda() && host.size() > 1) {
    Groups& g = groups();
    if (!g.device) g.device = std::make_unique<NcclProcessGroup>(host, device.index);
    return *g.device;
  }
#endif
  return host;
}

}  // namespace posgrad::distributed

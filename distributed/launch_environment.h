// LaunchEnvironment: which rank of how many this process is, read from the variables the
// launcher sets, before any MPI call:
//   mpirun (OpenMPI)   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   srun (Slurm)       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
//   MPICH, Intel MPI   PMI_RANK, PMI_SIZE
// The first launcher found wins, in that order. No variable: rank 0 of 1 (a plain run).
// A variable that is not a number, or a rank outside 0..size-1, is an Error naming it.
//
// Deliberately does not: start processes, or talk to the launcher (MPI_Init does that).
#pragma once

#include <map>
#include <string>

namespace posgrad::distributed {

struct LaunchEnvironment {
  int rank = 0;
  int size = 1;
  int local_rank = 0;        // the rank among the processes of this machine (picks the GPU)
  std::string launcher;      // "mpirun", "srun", "pmi" or "" (not launched by one)
};

// From the process's environment.
LaunchEnvironment launch_environment();
// From the given variables (for tests).
LaunchEnvironment launch_environment(const std::map<std::string, std::string>& variables);

}  // namespace posgrad::distributed

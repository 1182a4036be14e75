// The rank and size a process reads from its launcher's variables (mpirun, srun, PMI), and the
// one-line errors for variables that make no sense.
#include <boost/test/unit_test.hpp>

#include "distributed/launch_environment.h"
#include "tensor/error.h"

using namespace posgrad;
using namespace posgrad::distributed;

namespace {

bool error_says(const std::map<std::string, std::string>& variables, const std::string& part) {
  try {
    launch_environment(variables);
  } catch (const Error& e) {
    return std::string(e.what()).find(part) != std::string::npos;
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(launch)

BOOST_AUTO_TEST_CASE(no_launcher_is_rank_0_of_1) {
  const LaunchEnvironment env = launch_environment(std::map<std::string, std::string>{{"HOME", "/root"}});
  BOOST_TEST(env.rank == 0);
  BOOST_TEST(env.size == 1);
  BOOST_TEST(env.launcher.empty());
}

BOOST_AUTO_TEST_CASE(mpirun_srun_and_pmi_variables) {
  const auto mpirun = launch_environment(
      {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  BOOST_TEST(mpirun.rank == 3);
  BOOST_TEST(mpirun.size == 8);
  BOOST_TEST(mpirun.local_rank == 1);
  BOOST_TEST(mpirun.launcher == "mpirun");
  const auto srun = launch_environment({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "2"}});
  BOOST_TEST(srun.rank == 5);
  BOOST_TEST(srun.size == 6);
  BOOST_TEST(srun.local_rank == 2);
  BOOST_TEST(srun.launcher == "srun");
  const auto pmi = launch_environment({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  BOOST_TEST(pmi.rank == 1);
  BOOST_TEST(pmi.launcher == "pmi");
  // mpirun inside a Slurm allocation: mpirun's own variables win over the allocation's.
  const auto both = launch_environment({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  BOOST_TEST(both.launcher == "mpirun");
  BOOST_TEST(both.size == 2);
}

BOOST_AUTO_TEST_CASE(nonsense_variables_are_named) {
  BOOST_TEST(error_says({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, "OMPI_COMM_WORLD_RANK='x'"));
  BOOST_TEST(error_says({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}, "SLURM_NTASKS='0'"));
  BOOST_TEST(error_says({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}, "rank 4 (SLURM_PROCID) of 4"));
}

BOOST_AUTO_TEST_SUITE_END()

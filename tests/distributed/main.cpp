// Entry point of the distributed test suite: Boost.Test generates main() here; the other files
// in this folder add test cases. CTest runs it twice: as one process ("distributed") and as two
// ranks under mpirun ("distributed_mpi"); every case holds for any rank count, and the
// collectives are called in the same order on every rank.
#define BOOST_TEST_MODULE posgrad_distributed
#include <boost/test/unit_test.hpp>

// The NCCL engine (distributed/nccl_process_group.h) on one GPU, as one rank: the communicator
// bootstraps over the host group, and its all-reduce, broadcast and all-gather of CUDA tensors
// leave one rank's values as they are (and host numbers go through the host group). Two ranks cannot share one GPU in an NCCL communicator, so this is what one lent GPU can
// run; the ranks' sums themselves are the MPI engine's cases (test_collectives.cpp).
// Runs only in a build with NCCL, where libnccl.so.2 loads and a GPU is usable; skipped, saying
// which is missing, elsewhere. The library's loading itself (nccl_library) needs no GPU. It builds its own group over a single-process host, so it runs the same in the
// `distributed` and (twice, one per rank, each on its own group) the `distributed_mpi` test.
#include <boost/test/unit_test.hpp>

#include "distributed/single_process_group.h"
#include "tensor/ops.h"
#include "tests/device_support.h"
#ifdef POSGRAD_HAVE_NCCL
#include "distributed/nccl_library.h"
#include "distributed/nccl_process_group.h"
#endif

using namespace posgrad;
using namespace posgrad::distributed;

namespace {

struct nccl_built {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
#ifndef POSGRAD_HAVE_NCCL
    boost::test_tools::assertion_result r(false);
    r.message() << "posgrad was built without NCCL (nccl.h, with the CUDA backend and MPI)";
    return r;
#else
    return true;
#endif
  }
};

struct nccl_and_gpu_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id id) const {
    if (auto r = nccl_built{}(id); !r) return r;
#ifdef POSGRAD_HAVE_NCCL
    if (const std::string why = nccl_unavailable_reason(); !why.empty()) {
      boost::test_tools::assertion_result r(false);
      r.message() << why;
      return r;
    }
#endif
    return test::GpuPresent{}(id);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(nccl_library_loading, *boost::unit_test::precondition(nccl_built()))

// libnccl.so.2 loads with every function the engine calls, or nccl_library() says why not.
BOOST_AUTO_TEST_CASE(the_library_loads_or_says_why) {
#ifdef POSGRAD_HAVE_NCCL
  const std::string why = nccl_unavailable_reason();
  if (why.empty()) {
    int version = 0;
    BOOST_TEST(nccl_library().get_version(&version) == ncclSuccess);
    BOOST_TEST(version >= 20000, "NCCL version code " << version);
    BOOST_TEST(std::string(nccl_library().get_error_string(ncclInvalidArgument)).size() > 0);
  } else {
    BOOST_TEST(why.find("libnccl.so.2") != std::string::npos, why);
    BOOST_CHECK_EXCEPTION(nccl_library(), Error, [&](const Error& e) { return std::string(e.what()) == "NCCL: " + why; });
  }
#else
  BOOST_FAIL("a build without NCCL ran an nccl_library_loading case: its precondition should have skipped it");
#endif
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(nccl_engine, *boost::unit_test::precondition(nccl_and_gpu_present()))

#ifdef POSGRAD_HAVE_NCCL
BOOST_AUTO_TEST_CASE(one_rank_collectives_on_the_gpu) {
  SingleProcessGroup host;
  NcclProcessGroup nccl(host, 0);
  BOOST_TEST(nccl.engine() == "nccl");
  BOOST_TEST(nccl.size() == 1);
  const std::vector<float> values{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f};
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor t = Tensor::from_vector(values, {2, 3}).to(dtype).to(test::kGPU);
    nccl.all_reduce_sum(t);
    BOOST_TEST(t.device().is_cuda());
    BOOST_TEST(t.to(kCPU).to_vector<float>() == values, boost::test_tools::per_element());
    nccl.broadcast(t, 0);
    BOOST_TEST(t.to(kCPU).to_vector<float>() == values, boost::test_tools::per_element());
  }
  const Tensor gathered = nccl.all_gather(Tensor::from_vector(values, {2, 3}).to(test::kGPU));  // [2, 3]
  BOOST_TEST(gathered.shape() == (Shape{2, 3}));
  BOOST_TEST(gathered.to(kCPU).to_vector<float>() == values, boost::test_tools::per_element());
  std::vector<double> host_numbers{4.0};
  nccl.all_reduce_sum(host_numbers);  // host values go through the host group
  BOOST_TEST(host_numbers[0] == 4.0);
}
#else
BOOST_AUTO_TEST_CASE(one_rank_collectives_on_the_gpu) {
  BOOST_FAIL("a build without NCCL ran an nccl_engine case: its precondition should have skipped it");
}
#endif

BOOST_AUTO_TEST_SUITE_END()

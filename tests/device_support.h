// Device helpers shared by the test suites: kGPU (cuda:0) and the GpuPresent precondition, which
// runs a test case only where a usable GPU exists and otherwise reports it as skipped with the
// reason (a CPU-only build, no driver, no device); GpuAbsent is its opposite, for the checks of
// the errors a user gets without a GPU.
#pragma once

#include <boost/test/unit_test.hpp>

#include "tensor/device.h"

namespace posgrad::test {

inline const Device kGPU{DeviceType::CUDA, 0};

struct GpuPresent {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(cuda_available());
    if (!r) r.message() << "no usable GPU: " << cuda_unavailable_reason();
    return r;
  }
};

struct GpuAbsent {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(!cuda_available());
    if (!r) r.message() << "a GPU is present (the GPU cases cover it)";
    return r;
  }
};

}  // namespace posgrad::test

// Entry point of the nn test suite: Boost.Test generates main() here; the other files in this
// folder add test cases.
#define BOOST_TEST_MODULE posgrad_nn
#include <boost/test/unit_test.hpp>

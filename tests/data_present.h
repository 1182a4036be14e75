// data_present: a Boost.Test precondition that skips a case or suite, with the reason, when a
// real data set is not in the data folder (datasets/data_dir.h), as in a clone without ../shared:
//   BOOST_AUTO_TEST_CASE(real_mnist, *boost::unit_test::precondition(test::data_present("mnist")))
// Deliberately not here: reading the data (each suite's own helpers do).
#pragma once

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "datasets/data_dir.h"
#include "tensor/error.h"

namespace posgrad::test {

struct data_present {
  std::string sub;
  explicit data_present(std::string s) : sub(std::move(s)) {}
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    std::optional<std::filesystem::path> dir;
    try {
      dir = try_find_data_dir();
    } catch (const Error& e) {
      boost::test_tools::assertion_result r(false);
      r.message() << e.what();
      return r;
    }
    if (!dir || !std::filesystem::is_directory(*dir / sub)) {
      boost::test_tools::assertion_result r(false);
      r.message() << "skipped: real data folder '" << sub << "' not found (set " << kDataDirEnv << ")";
      return r;
    }
    return true;
  }
};

}  // namespace posgrad::test

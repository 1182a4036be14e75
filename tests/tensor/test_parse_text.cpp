// parse_text: one spelling of truth values and numbers for settings files, -D overrides and
// positional-scheme options (they used to disagree: the config took "y", the registry did not).
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "attention/registry.h"
#include "tensor/error.h"
#include "tensor/parse_text.h"

using namespace posgrad;

BOOST_AUTO_TEST_SUITE(parse_text)

BOOST_AUTO_TEST_CASE(bools) {
  for (const char* t : {"true", "True", "YES", "on", "1", " true "}) BOOST_TEST((parse_bool(t) == std::optional<bool>(true)), t);
  for (const char* f : {"false", "FALSE", "no", "Off", "0"}) BOOST_TEST((parse_bool(f) == std::optional<bool>(false)), f);
  for (const char* bad : {"", "y", "n", "2", "truee", "t"}) BOOST_TEST(!parse_bool(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(integers) {
  BOOST_TEST(*parse_int64("42") == 42);
  BOOST_TEST(*parse_int64("-7") == -7);
  BOOST_TEST(*parse_int64("+7") == 7);
  BOOST_TEST(*parse_int64("9223372036854775807") == INT64_MAX);
  for (const char* bad : {"", "3.0", "1e3", "12a", "--1", "+-1", "9223372036854775808"})
    BOOST_TEST(!parse_int64(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(doubles) {
  BOOST_TEST(*parse_double("0.5") == 0.5);
  BOOST_TEST(*parse_double("1e-3") == 1e-3);
  BOOST_TEST(*parse_double("-2") == -2.0);
  BOOST_TEST(std::isinf(*parse_double("inf")));
  BOOST_TEST(*parse_double("-inf") < 0);
  BOOST_TEST(std::isnan(*parse_double("nan")));
  for (const char* bad : {"", "1,5", "abc", "1e", "--1", "0x10"}) BOOST_TEST(!parse_double(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(hook_options_use_the_same_spellings) {
  const HookOptions yes{{"flag", "Yes"}}, bad{{"flag", "y"}};
  BOOST_TEST(yes.flag("flag", false) == true);
  BOOST_CHECK_THROW(bad.flag("flag", false), Error);
}

BOOST_AUTO_TEST_SUITE_END()

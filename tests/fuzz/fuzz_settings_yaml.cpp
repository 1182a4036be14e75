// Fuzz harness: a settings file (Settings::load_yaml_text) with the input as the file's text,
// against a declaration of every setting type (settings_declared.h). Accepted input must
// round-trip through to_yaml() (check_round_trip).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/settings_declared.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  DeclaredSettings declared;
  const std::string text(as_text(data, size));
  if (expect_error_or_success([&] { declared.s.load_yaml_text(text, "fuzz input"); }))
    check_round_trip(declared.s);
  return 0;
}

// Fuzz harness: -D overrides (Settings::apply_override). Each line of the input is one
// "key=value" assignment, applied in order to a declaration of every setting type
// (settings_declared.h); a rejected line leaves the settings as they were and the next line
// goes on. Whatever was accepted must round-trip through to_yaml() (check_round_trip).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/settings_declared.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  DeclaredSettings declared;
  std::string_view rest = as_text(data, size);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    expect_error_or_success([&] { declared.s.apply_override(line); });
  }
  check_round_trip(declared.s);
  return 0;
}

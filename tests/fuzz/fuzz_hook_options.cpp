// Fuzz harness: attention-hook options from text (make_hook with a HookSpec whose HookOptions
// come from the input). Input lines:
//   line 1:            the hook name ("gaussian_span", "rope", ... or anything else)
//   "key=value" lines: the options, given as text like a config file would (the value is
//                      everything after the first '='; a later line with the same key replaces
//                      the earlier one; blank lines are skipped)
//   "@width=16", "@heads=2", "@dims=4,4": the attention layer the hook joins (HookContext);
//                      the harness clamps them (width <= 64, heads <= 8, at most 3 dims of
//                      <= 16) so a case stays small; defaults width 16, heads 2, dims 4,4
// A hook that is built is asked for its summary() (nothing else is run: the harness fuzzes the
// options, not the schemes' arithmetic).
// Inputs with an option value that reads as an integer above 64 are skipped: integer options are
// sizes (hidden, layers, size, buckets, ...), a bigger one only asks for a bigger table, and a
// table beyond memory is not a parsing question (a normal build reports "out of host memory"
// as a posgrad::Error when the allocation fails; ASan and libFuzzer's malloc limit report it as
// a crash instead). Negative and huge negative values are still fuzzed.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "attention/registry.h"
#include "tensor/parse_text.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

int64_t clamped(std::string_view text, int64_t lo, int64_t hi, int64_t fallback) {
  const auto v = posgrad::parse_int64(text);
  if (!v) return fallback;
  return *v < lo ? lo : (*v > hi ? hi : *v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  std::string_view rest = as_text(data, size);
  std::string name;
  std::map<std::string, std::string> options;
  posgrad::HookContext context{.width = 16, .heads = 2, .structure = {4, 4}};
  bool first = true;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (first) {
      name = std::string(line);
      first = false;
      continue;
    }
    if (line.empty()) continue;  // a blank line is no option
    const size_t eq = line.find('=');
    const std::string key(line.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? std::string_view{} : line.substr(eq + 1));
    if (key == "@width") context.width = clamped(value, -4, 64, context.width);
    else if (key == "@heads") context.heads = clamped(value, -2, 8, context.heads);
    else if (key == "@dims") {
      context.structure.clear();
      std::string_view dims = value;
      while (!dims.empty() && context.structure.size() < 3) {
        const size_t comma = dims.find(',');
        context.structure.push_back(clamped(dims.substr(0, comma), 0, 16, 1));
        dims = comma == std::string_view::npos ? std::string_view{} : dims.substr(comma + 1);
      }
    } else {
      options[key] = value;
    }
  }
  for (const auto& [key, value] : options)
    if (const auto v = posgrad::parse_int64(value); v && *v > 64) return 0;
  posgrad::Generator gen(1);
  expect_error_or_success([&] {
    const auto hook = posgrad::make_hook(posgrad::HookSpec{name, posgrad::HookOptions(options)}, context, gen);
    if (!hook) fuzz_finding("make_hook returned no hook for '" + name + "'");
    (void)hook->summary();
  });
  return 0;
}

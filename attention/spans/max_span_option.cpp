#include "attention/spans/max_span_option.h"

#include "tensor/error.h"

#include <fmt/ranges.h>

namespace posgrad {

int64_t max_span_option(const HookContext& context, const HookOptions& options, std::string_view hook) {
  if (context.structure.size() > 1)
    fail("{}: needs 1-D sequences, but the context is a {}-D grid", hook, context.structure.size());
  const int64_t fallback = context.structure.size() == 1 ? context.structure[0] - 1 : 0;
  if (!options.has("max_span") && fallback < 1)
    fail("{}: cannot derive max_span from the context (structure {}); set option max_span", hook,
         fmt::join(context.structure, "x"));
  return options.integer("max_span", fallback);
}

}  // namespace posgrad

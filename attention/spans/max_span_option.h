// The maximum span S of a 1-D hook (adaptive_span, dynamic_span, key_pe): the `max_span` option, or
// N - 1 of the context's sequence when the option is absent. Grids and a context with no length
// to derive it from are errors naming the hook.
// Deliberately does not: read any other option, or build the hook.
#pragma once

#include "attention/registry.h"

#include <cstdint>
#include <string_view>

namespace posgrad {

int64_t max_span_option(const HookContext& context, const HookOptions& options, std::string_view hook);

}  // namespace posgrad

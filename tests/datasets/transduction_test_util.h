// Helpers shared by the transduction task tests: a text fingerprint of examples (for golden hashes
// that catch any change in the generated data) and tree construction shorthands.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "datasets/checksum.h"
#include "datasets/transduction/transduction_example.h"

namespace posgrad::test {

// Every list of every example, in order, as text: "s:1,2|t:...|sh:...|th:...|to:...;".
inline std::string examples_text(const std::vector<TransductionExample>& examples, size_t count) {
  std::string text;
  for (size_t i = 0; i < count && i < examples.size(); ++i) {
    const TransductionExample& e = examples[i];
    text += fmt::format("s:{}|t:{}|sh:{}|th:{}|to:{};", fmt::join(e.source, ","), fmt::join(e.target, ","),
                        fmt::join(e.source_heap, ","), fmt::join(e.target_heap, ","), fmt::join(e.target_order, ","));
  }
  return text;
}

// SHA-256 of the first `count` examples of each part, one after another.
inline std::string splits_fingerprint(const TransductionSplits& splits, size_t count) {
  return sha256_hex(examples_text(splits.train, count) + "/" + examples_text(splits.dev, count) + "/" +
                    examples_text(splits.test, count));
}

}  // namespace posgrad::test

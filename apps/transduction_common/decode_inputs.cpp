// The texts of a decode job (see decode_inputs.h).
#include "apps/transduction_common/decode_inputs.h"

#include <fstream>

#include <fmt/format.h>

#include "tensor/error.h"

namespace posgrad::transduction_app {

std::vector<DecodeInput> decode_inputs(const std::vector<std::string>& inputs, const std::string& file,
                                       const std::string& example) {
  std::vector<DecodeInput> texts;
  for (size_t i = 0; i < inputs.size(); ++i)
    texts.push_back({inputs[i], inputs.size() == 1 ? "--input" : fmt::format("--input {}", i + 1)});
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) fail("--file: cannot read '{}'", file);
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      const auto start = line.find_first_not_of(" \t\r");
      if (start == std::string::npos || line[start] == '#') continue;
      texts.push_back({line, fmt::format("{} line {}", file, number)});
    }
  }
  if (texts.empty()) fail("decode: give {}", example);
  return texts;
}

}  // namespace posgrad::transduction_app

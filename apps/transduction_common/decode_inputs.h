// The texts a transduction app's decode job reads: each --input (repeatable), then each line of
// --file, skipping blank lines and lines starting with #; each text with where it came from
// ("--input", "--input 2", "words.txt line 7") for its error line. An unreadable file, or no text
// at all (`example` shows the form: "a word with --input \"3 5 7 11\" or a file of words"), is an
// Error. Parsing a text (a word, a tree) is the app's.
// Deliberately does not: parse or decode anything.
#pragma once

#include <string>
#include <vector>

namespace posgrad::transduction_app {

struct DecodeInput {
  std::string text;   // as given
  std::string where;  // "--input 2", "FILE line 7"
};

std::vector<DecodeInput> decode_inputs(const std::vector<std::string>& inputs, const std::string& file,
                                       const std::string& example);

}  // namespace posgrad::transduction_app

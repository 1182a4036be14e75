// The decode job of the seqtasks app: a trained run decodes words given on the command line
// (--input "3 5 7 11", repeatable) or in a file (--file, one word a line, blank lines and lines
// starting with # skipped), greedily with the cache, from the run's best (or latest) checkpoint.
// For each word it prints the input, the model's output and whether it is the task's answer:
//
//   input    3 5 7 11
//   output   11 7 5 3
//   correct  yes
//
// The word is the task's content only: COPY adds SOS and EOS itself. As in training, REPEAT and
// REVERSE are given the answer's first token (the paper's setup: their targets have no SOS) and
// decode the rest; the decoder runs for the answer's length. A token outside the task's range,
// a word that is not whitespace-separated integers, or an empty word is one error line naming it,
// and nothing is decoded.
// Deliberately does not: sample, beam-search or stop early at EOS.
#pragma once

#include <string>
#include <vector>

#include "apps/seqtasks/seqtasks_settings.h"

namespace posgrad::seqtasks_app {

// "3 5 7 11" -> {3, 5, 7, 11}; anything but integers separated by white space is an Error naming
// `where` and the offending text.
std::vector<int64_t> parse_word(const std::string& text, const std::string& where);

void decode(SeqtasksSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
            const std::vector<std::string>& inputs, const std::string& file);

}  // namespace posgrad::seqtasks_app

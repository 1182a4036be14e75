// The decode job of the seqtasks app (see seqtasks_decode.h).
#include "apps/seqtasks/seqtasks_decode.h"

#include <sstream>

#include <fmt/ranges.h>

#include "apps/common/cli.h"
#include "apps/common/run_checkpoints.h"
#include "apps/transduction_common/decode_inputs.h"
#include "apps/transduction_common/transduction_run.h"
#include "attention/transduction/greedy_decoding.h"
#include "nn/checkpoint.h"

namespace posgrad::seqtasks_app {

std::vector<int64_t> parse_word(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::vector<int64_t> word;
  std::string item;
  while (in >> item) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) fail("{}: '{}' is not an integer token (a word is integers separated by spaces)", where, item);
    word.push_back(value);
  }
  if (word.empty()) fail("{}: the word is empty", where);
  return word;
}

void decode(SeqtasksSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
            const std::vector<std::string>& inputs, const std::string& file) {
  apps::load_run_settings(settings, run_dir);
  const SequenceTask task = parse_sequence_task(c.task);
  // Every word is read and checked before anything is decoded.
  std::vector<std::pair<std::string, std::vector<int64_t>>> words;
  for (const auto& [text, where] :
       transduction_app::decode_inputs(inputs, file, "a word with --input \"3 5 7 11\" or a file of words with --file"))
    words.emplace_back(text, parse_word(text, where));
  std::vector<TransductionExample> examples;
  for (const auto& [text, word] : words) examples.push_back(sequence_example(task, word, c.data.vocab_size));

  Generator gen(static_cast<uint64_t>(c.seed));
  EncoderDecoder model(model_config(c), gen);
  model.load_state_dict(load_checkpoint(apps::run_checkpoint_folder(run_dir, which)).model);
  int64_t correct = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const TransductionExample& e = examples[i];
    const TransductionBatch batch = make_transduction_batch(examples, {static_cast<int64_t>(i)});
    const Tensor decoded = greedy_decode(model, batch.source, batch.source_padding(), Tensor::from_vector<int64_t>({e.target[0]}, {1}),
                                         {.steps = static_cast<int64_t>(e.target.size()) - 1});
    const std::vector<int64_t> output = decoded.to_vector<int64_t>();
    const bool right = output == e.target;
    correct += right;
    // COPY's SOS and EOS are the task's frame, not the word: print the word part.
    const bool framed = task == SequenceTask::Copy;
    const auto shown = [&](const std::vector<int64_t>& tokens) {
      return std::vector<int64_t>(tokens.begin() + (framed ? 1 : 0), tokens.end() - (framed ? 1 : 0));
    };
    fmt::print("input    {}\noutput   {}\ncorrect  {}\n", fmt::join(words[i].second, " "), fmt::join(shown(output), " "),
               right ? "yes" : fmt::format("no (expected {})", fmt::join(shown(e.target), " ")));
  }
  if (examples.size() > 1) fmt::print("{} of {} correct\n", correct, examples.size());
}

}  // namespace posgrad::seqtasks_app

// The sequence transduction tasks (see sequence_tasks.h).
#include "datasets/transduction/sequence_tasks.h"

#include <algorithm>

#include "datasets/seeding.h"
#include "tensor/error.h"

namespace posgrad {

SequenceTask parse_sequence_task(const std::string& name) {
  if (name == "copy") return SequenceTask::Copy;
  if (name == "repeat") return SequenceTask::Repeat;
  if (name == "reverse") return SequenceTask::Reverse;
  fail("sequence task '{}' is not one of: copy, repeat, reverse", name);
}

std::string sequence_task_name(SequenceTask task) {
  switch (task) {
    case SequenceTask::Copy: return "copy";
    case SequenceTask::Repeat: return "repeat";
    case SequenceTask::Reverse: return "reverse";
  }
  fail("sequence_task_name: unknown task");
}

int64_t sequence_task_max_token(SequenceTask task, int64_t vocab_size) {
  if (vocab_size < 2) fail("sequence task {}: vocab_size must be >= 2, got {}", sequence_task_name(task), vocab_size);
  return task == SequenceTask::Copy ? vocab_size : vocab_size - 1;
}

TransductionExample sequence_example(SequenceTask task, std::span<const int64_t> word, int64_t vocab_size) {
  const int64_t max_token = sequence_task_max_token(task, vocab_size);
  if (word.empty()) fail("sequence task {}: the word is empty", sequence_task_name(task));
  for (size_t i = 0; i < word.size(); ++i)
    if (word[i] < 1 || word[i] > max_token)
      fail("sequence task {}: token {} at index {} is outside 1..{}", sequence_task_name(task), word[i], i, max_token);
  TransductionExample example;
  switch (task) {
    case SequenceTask::Copy:
      example.source.push_back(kSosToken);
      example.source.insert(example.source.end(), word.begin(), word.end());
      example.source.push_back(eos_token(vocab_size));
      example.target = example.source;
      break;
    case SequenceTask::Repeat:
      example.source.assign(word.begin(), word.end());
      example.target = example.source;
      example.target.insert(example.target.end(), word.begin(), word.end());
      break;
    case SequenceTask::Reverse:
      example.source.assign(word.begin(), word.end());
      example.target.assign(word.rbegin(), word.rend());
      break;
  }
  return example;
}

int64_t draw_sequence_length(const SequenceTaskSettings& settings, DrawStream& stream) {
  const double length = stream.normal(settings.length_mean, settings.length_stddev);
  return std::max<int64_t>(1, static_cast<int64_t>(length));  // truncation toward zero, as int() does
}

std::vector<TransductionExample> draw_sequence_examples(SequenceTask task, const SequenceTaskSettings& settings,
                                                        int64_t count, DrawStream& stream) {
  if (count < 0) fail("sequence task {}: the number of examples must be >= 0, got {}", sequence_task_name(task), count);
  const int64_t max_token = sequence_task_max_token(task, settings.vocab_size);
  std::vector<int64_t> lengths(static_cast<size_t>(count));
  for (int64_t& length : lengths) length = draw_sequence_length(settings, stream);
  std::vector<TransductionExample> examples;
  examples.reserve(lengths.size());
  std::vector<int64_t> word;
  for (int64_t length : lengths) {
    word.resize(static_cast<size_t>(length));
    for (int64_t& token : word) token = stream.integer(1, max_token);
    examples.push_back(sequence_example(task, word, settings.vocab_size));
  }
  return examples;
}

TransductionSplits make_sequence_splits(SequenceTask task, const SequenceTaskSettings& settings,
                                        const SplitSizes& sizes, uint64_t seed) {
  if (!(settings.length_stddev >= 0.0))
    fail("sequence task {}: length_stddev must be >= 0, got {}", sequence_task_name(task), settings.length_stddev);
  DrawStream stream(derive_seed(seed, SeedStream::Transduction));
  TransductionSplits splits;
  splits.train = draw_sequence_examples(task, settings, sizes.train, stream);
  splits.dev = draw_sequence_examples(task, settings, sizes.dev, stream);
  splits.test = draw_sequence_examples(task, settings, sizes.test, stream);
  return splits;
}

}  // namespace posgrad

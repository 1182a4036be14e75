// The train and eval jobs the two transduction apps share (seqtasks, treetasks). train() runs the
// APE paper's recipe (spec ape.md 7.1): AdamW, a linear warmup from 1e-7 then a cosine decay to
// 1e-9 per optimizer step, the teacher-forced cross-entropy (label smoothing
// train.label_smoothing), the training examples shuffled per epoch; the dev loss after every
// train.eval_every epochs and every epoch past train.eval_all_after, and the checkpoint of the
// lowest dev loss kept as the run's `best`. At the end the best checkpoint is scored on the test
// split (score_split) and summary.json holds:
//   test_ppl            the paper's perplexity: exp(mean cross-entropy over the scored targets)
//   test_ppl_released   the released code's shifted-mask variant (spec 10.13), beside it
//   test_exact_match    the share of test examples that greedy decoding gets exactly right,
//                       token for token (not in the paper)
// Before the run folder is created, one forward on a training example checks that the model runs
// on the data, so a scheme that cannot take their positions writes nothing.
// metrics.jsonl has one record per evaluated epoch (train and dev loss, dev perplexity, lr): the
// learning curves. Checkpoints at every evaluation (latest and best); --resume continues exactly
// (the dropout generators included).
// Data parallel (apps/common/data_parallel.h): under `mpirun -np N` each rank batches every
// global batch of the epoch's seeded order whole (the single process's padding) and computes a
// contiguous slice of its rows; the loss is the global batch's mean over its scored tokens (each
// rank divides its tokens' summed loss by the global count), and the dropout masks are the single
// process's (nn/mask_rows.h), as are the embedding's scale_grad_by_freq counts (those of the
// global batch, nn/token_counts.h), so N ranks train as one process with the same
// train.batch_size, to float rounding. Rank 0 alone scores the dev split, writes the run
// folder and scores the test split; --resume works with another rank count.
// Deliberately does not: know the tasks or how greedy decoding finds its positions (the app gives
// the data and a GreedyMatcher), decode user input, run sweeps (posgrad-sweep runs the app once
// per cell), or share the dev and test scoring across ranks.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/cli.h"
#include "apps/transduction_common/transduction_settings.h"
#include "datasets/transduction/transduction_batch.h"

namespace posgrad::transduction_app {

// Greedy decoding of examples[indices] (batched as `batch`): for each, whether the decoded output
// equals its target at every step.
using GreedyMatcher = std::function<std::vector<bool>(EncoderDecoder&, const std::vector<TransductionExample>&,
                                                       const std::vector<int64_t>& indices, const TransductionBatch&)>;

// Greedy decoding of the sequence with the key/value cache, the first output token given (SOS, or
// the target's first token where the task has no SOS, as in training) and as many steps as the
// longest target of the batch has; right when the output starts with the whole target.
std::vector<bool> sequence_greedy_matches(EncoderDecoder& model, const std::vector<TransductionExample>& examples,
                                          const std::vector<int64_t>& indices, const TransductionBatch& batch);

struct TransductionExperiment {
  std::string app;           // "seqtasks": the first word of the start line
  std::string description;   // "reverse with ape": the rest of it
  TransductionSplits data;
  EncoderDecoderConfig model;
  uint64_t seed = 0;         // initialisation, dropout, shuffling
  Device device = kCPU;      // where the model trains and is scored
  TrainSettings train;
  GreedyMatcher greedy_matches;
  nlohmann::json summary;    // keys added to summary.json (task, scheme, ...)
};

// What every app's experiment takes from the shared settings: the app's name and description, the
// seed, the device (an Error when it cannot be used), the recipe. The app fills in data, model,
// greedy_matches and summary.
TransductionExperiment shared_experiment(const TransductionSettings& c, const std::string& app,
                                         const std::string& description);

// The three metrics over a split, with the model in evaluation mode (restored after).
struct SplitScore {
  double ppl = 0, ppl_released = 0, exact_match = 0, loss = 0;
  int64_t examples = 0;
};
SplitScore score_split(EncoderDecoder& model, const std::vector<TransductionExample>& examples, int64_t batch_size,
                       const GreedyMatcher& greedy_matches);  // empty: no exact match (0)

void train(const TransductionExperiment& experiment, const apps::Settings& settings, const apps::TrainRequest& request);

// Scores the run's checkpoint (best or latest) on the dev or test split; prints one line and
// writes RUN/eval-<split>-<which>.json.
void eval(const TransductionExperiment& experiment, const std::string& run_dir, const std::string& which,
          const std::string& split);

}  // namespace posgrad::transduction_app

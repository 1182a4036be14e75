// The command line of a transduction app (seqtasks, treetasks): its jobs, the same for both,
//   app [train] --config ... [-Dkey=value]... [--out RUN]                      train
//   app train --resume RUN                                                    continue
//   app eval RUN [--checkpoint best|latest] [--split dev|test]                score
//   app decode RUN --input TEXT [--file FILE] [--checkpoint best|latest]      try the model
//   app figures RUN [--checkpoint best|latest] [--example K]                  draw (transduction_figures.h)
// The app gives its declared settings, how they become an experiment (transduction_run.h), its
// decode job and its figures job; main() is then one call.
// Deliberately does not: declare settings, parse what decode reads, or know any task.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "apps/transduction_common/transduction_figures.h"
#include "apps/transduction_common/transduction_run.h"

namespace posgrad::transduction_app {

struct TransductionApp {
  std::string name;         // "seqtasks"
  std::string description;  // the first line of --help
  // The experiment of the settings as they stand (after a run's config.yaml was read).
  std::function<TransductionExperiment()> experiment;
  // decode(run folder, best|latest, the --input texts, the --file path or "").
  std::function<void(const std::string&, const std::string&, const std::vector<std::string>&, const std::string&)> decode;
  std::string decode_help;  // "decode words with a trained run and say whether each output is right"
  std::string input_help;   // "a word: integer tokens separated by spaces, e.g. \"3 5 7 11\" (repeatable)"
  std::string file_help;    // "a file of words, one a line"
  // figures(the run folder, checkpoint and example): loads the run's settings and draws.
  std::function<void(const FiguresRequest&)> figures;
};

// Parses the command line and runs the job; the exit status (cli.h).
int run_transduction_app(int argc, char** argv, apps::Settings& settings, const TransductionApp& app);

}  // namespace posgrad::transduction_app

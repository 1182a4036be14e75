// seqtasks: the APE paper's sequence transduction tasks (COPY, REPEAT, REVERSE; spec ape.md 7.1,
// 7.2, Table 2(a)) with an encoder-decoder transformer and any positional scheme. Jobs:
//   seqtasks [train] --config configs/seqtasks/<size>.yaml --config configs/seqtasks/schemes/<scheme>.yaml
//            [-Dkey=value]... [--out RUN]                                      train
//   seqtasks train --resume RUN                                               continue
//   seqtasks eval RUN [--checkpoint best|latest] [--split dev|test]           score
//   seqtasks decode RUN --input "3 5 7 11" [--file WORDS] [--checkpoint ...]  try the model
// `seqtasks --help` lists every setting with its type, default and meaning.
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).
#include <CLI/CLI.hpp>

#include "apps/common/cli.h"
#include "apps/seqtasks/seqtasks_decode.h"
#include "apps/seqtasks/seqtasks_experiment.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::seqtasks_app;

int main(int argc, char** argv) {
  SeqtasksSettings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("seqtasks", "seqtasks: COPY, REPEAT and REVERSE with an encoder-decoder and APE or another scheme",
                     settings);
  cli.on_train([&](const TrainRequest& request) { transduction_app::train(experiment(c), settings, request); });
  std::string run_dir, which = "best", split = "test";
  CLI::App& eval_job = cli.add_job("eval", "score a run's checkpoint on the dev or the test split",
                                   [&] {
                                     load_run_settings(settings, run_dir);
                                     transduction_app::eval(experiment(c), run_dir, which, split);
                                   });
  refuse_empty(eval_job.add_option("run", run_dir, "the run folder"))->required();
  eval_job.add_option("--checkpoint", which, "which checkpoint (best: the lowest dev loss; latest)")
      ->check(CLI::IsMember({"best", "latest"}));
  eval_job.add_option("--split", split, "dev or test")->check(CLI::IsMember({"dev", "test"}));
  std::string decode_run, decode_which = "best", file;
  std::vector<std::string> inputs;
  CLI::App& decode_job = cli.add_job("decode", "decode words with a trained run and say whether each output is right",
                                     [&] { decode(c, settings, decode_run, decode_which, inputs, file); });
  refuse_empty(decode_job.add_option("run", decode_run, "the run folder"))->required();
  decode_job.add_option("--input", inputs, "a word: integer tokens separated by spaces, e.g. \"3 5 7 11\" (repeatable)");
  refuse_empty(decode_job.add_option("--file", file, "a file of words, one a line"));
  decode_job.add_option("--checkpoint", decode_which, "which checkpoint (best, latest)")->check(CLI::IsMember({"best", "latest"}));
  return cli.run(argc, argv);
}

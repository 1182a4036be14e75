// treetasks: the APE paper's tree transduction tasks (COPY, ROTATE, C3, TREE-OPS, breadth- or
// depth-first output; spec ape.md 7.1, 7.3, Table 2(b)) with an encoder-decoder and tree APE on
// heap positions or a flattened baseline. Jobs:
//   treetasks [train] --config configs/treetasks/<size>.yaml --config configs/treetasks/schemes/<scheme>.yaml
//             [-Dkey=value]... [--out RUN]                                     train
//   treetasks train --resume RUN                                              continue
//   treetasks eval RUN [--checkpoint best|latest] [--split dev|test]          score
//   treetasks decode RUN --input "(11 (12 1 2) 3)" [--file TREES]             try the model
// `treetasks --help` lists every setting with its type, default and meaning.
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).
#include <CLI/CLI.hpp>

#include "apps/common/cli.h"
#include "apps/treetasks/treetasks_decode.h"
#include "apps/treetasks/treetasks_experiment.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::treetasks_app;

int main(int argc, char** argv) {
  TreetasksSettings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("treetasks", "treetasks: tree COPY, ROTATE, C3 and TREE-OPS with an encoder-decoder and tree APE",
                     settings);
  cli.on_train([&](const TrainRequest& request) { transduction_app::train(experiment(c), settings, request); });
  std::string run_dir, which = "best", split = "test";
  CLI::App& eval_job = cli.add_job("eval", "score a run's checkpoint on the dev or the test split", [&] {
    load_run_settings(settings, run_dir);
    transduction_app::eval(experiment(c), run_dir, which, split);
  });
  refuse_empty(eval_job.add_option("run", run_dir, "the run folder"))->required();
  eval_job.add_option("--checkpoint", which, "which checkpoint (best: the lowest dev loss; latest)")
      ->check(CLI::IsMember({"best", "latest"}));
  eval_job.add_option("--split", split, "dev or test")->check(CLI::IsMember({"dev", "test"}));
  std::string decode_run, decode_which = "best", file;
  std::vector<std::string> inputs;
  CLI::App& decode_job = cli.add_job("decode", "decode trees with a trained run and say whether each output is right",
                                     [&] { decode(c, settings, decode_run, decode_which, inputs, file); });
  refuse_empty(decode_job.add_option("run", decode_run, "the run folder"))->required();
  decode_job.add_option("--input", inputs, "a tree in the bracketed form, e.g. \"(11 (12 1 2) 3)\" (repeatable)");
  refuse_empty(decode_job.add_option("--file", file, "a file of trees, one a line"));
  decode_job.add_option("--checkpoint", decode_which, "which checkpoint (best, latest)")->check(CLI::IsMember({"best", "latest"}));
  return cli.run(argc, argv);
}

// cct: the Compact Convolutional Transformer on CIFAR-10 with the positional schemes of APE's
// Table 2(c) (spec ape.md sections 7.4 and 8). Jobs:
//   cct [train] --config configs/cct/<scheme>.yaml [-Dkey=value]... [--out RUN]   train
//   cct train --resume RUN                                                        continue
//   cct eval RUN [--checkpoint best|latest] [--split val|test]                    score
//   cct figures RUN [--checkpoint best|latest]                                    draw
// `cct --help` lists every setting with its type, default and meaning.
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).

#include "apps/cct/cct_figures.h"
#include "apps/cct/cct_run.h"
#include "apps/common/cli.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::cct_app;

int main(int argc, char** argv) {
  CctSettings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("cct", "cct: CCT image classification on CIFAR-10 with APE and the other positional schemes", settings);
  cli.on_train([&](const TrainRequest& request) { train(c, settings, request); });
  std::string run_dir, which = "best", split = "test";
  cli.add_job("eval", "score a run's checkpoint on the validation or the test split",
              [&] { eval(c, settings, run_dir, which, split); })
      .required_path("run", run_dir, "the run folder")
      .choice("--checkpoint", which, {"best", "latest"}, "which checkpoint (best: chosen on validation)")
      .choice("--split", split, {"val", "test"}, "the split scored");
  std::string figures_run, figures_which = "best";
  cli.add_job("figures", "draw a run's figures into RUN/figures/",
              [&] { draw_figures(c, settings, figures_run, figures_which); })
      .required_path("run", figures_run, "the run folder")
      .choice("--checkpoint", figures_which, {"best", "latest"}, "which checkpoint");
  return cli.run(argc, argv);
}

// posattn: the thesis experiments of posattn (positional attention with a learned SIREN relative
// encoding and a Gaussian span, posattn spec sections 8-10) on CIFAR-10, MNIST or sequential
// MNIST. Jobs:
//   posattn [train] --config configs/posattn/<arm>.yaml [-Dkey=value]... [--out RUN]   train
//   posattn train --resume RUN                                                        continue
//   posattn eval RUN [--checkpoint best|latest] [--split val|test]                    score
//   posattn figures RUN                                                               draw
// `posattn --help` lists every setting with its type, default and meaning.
//
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).
#include "apps/common/cli.h"
#include "apps/posattn/figures.h"
#include "apps/posattn/posattn_settings.h"
#include "apps/posattn/run_jobs.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::posattn_app;

int main(int argc, char** argv) {
  PosattnSettings c;
  Settings settings;
  declare(settings, c);
  AppCommandLine cli("posattn", "posattn: image classification with learned relative positions and spans (the thesis protocol)",
                     settings);
  cli.on_train([&](const TrainRequest& request) { train(c, settings, request); });
  std::string run_dir, which = "best", split = "val";
  cli.add_job("eval", "score a run's checkpoint on the validation split or the test set",
              [&] { eval(c, settings, run_dir, which, split); })
      .required_path("run", run_dir, "the run folder")
      .choice("--checkpoint", which, {"best", "latest"}, "which checkpoint")
      .choice("--split", split, {"val", "test"}, "val (the run's seeded split) or test (test_batch.bin / t10k)");
  std::string figures_run, figures_which = "best";
  int64_t figures_images = 3;
  cli.add_job("figures", "draw a run's figures into RUN/figures/",
              [&] { draw_figures(c, settings, figures_run, figures_which, figures_images); })
      .required_path("run", figures_run, "the run folder")
      .choice("--checkpoint", figures_which, {"best", "latest"}, "which checkpoint")
      .integer("--images", figures_images, "validation images for the attention figures", {1, 8});
  return cli.run(argc, argv);
}

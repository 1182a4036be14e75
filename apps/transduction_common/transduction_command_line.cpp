// The transduction apps' command line (see transduction_command_line.h).
#include "apps/transduction_common/transduction_command_line.h"

#include <CLI/CLI.hpp>

namespace posgrad::transduction_app {

using namespace posgrad::apps;

int run_transduction_app(int argc, char** argv, Settings& settings, const TransductionApp& app) {
  AppCommandLine cli(app.name, app.description, settings);
  cli.on_train([&](const TrainRequest& request) { train(app.experiment(), settings, request); });

  std::string run_dir, which = "best", split = "test";
  CLI::App& eval_job = cli.add_job("eval", "score a run's checkpoint on the dev or the test split", [&] {
    load_run_settings(settings, run_dir);
    eval(app.experiment(), run_dir, which, split);
  });
  refuse_empty(eval_job.add_option("run", run_dir, "the run folder"))->required();
  eval_job.add_option("--checkpoint", which, "which checkpoint (best: the lowest dev loss; latest)")
      ->check(CLI::IsMember({"best", "latest"}));
  eval_job.add_option("--split", split, "dev or test")->check(CLI::IsMember({"dev", "test"}));

  std::string decode_run, decode_which = "best", file;
  std::vector<std::string> inputs;
  CLI::App& decode_job =
      cli.add_job("decode", app.decode_help, [&] { app.decode(decode_run, decode_which, inputs, file); });
  refuse_empty(decode_job.add_option("run", decode_run, "the run folder"))->required();
  decode_job.add_option("--input", inputs, app.input_help);
  refuse_empty(decode_job.add_option("--file", file, app.file_help));
  decode_job.add_option("--checkpoint", decode_which, "which checkpoint (best, latest)")
      ->check(CLI::IsMember({"best", "latest"}));

  FiguresRequest figures;
  CLI::App& figures_job = cli.add_job(
      "figures", "draw a run's learning curves, APE's rotation angles and the cross-attention on a test example",
      [&] { app.figures(figures); });
  refuse_empty(figures_job.add_option("run", figures.run_dir, "the run folder"))->required();
  figures_job.add_option("--checkpoint", figures.which, "which checkpoint (best, latest)")
      ->check(CLI::IsMember({"best", "latest"}));
  figures_job.add_option("--example", figures.example, "the test example whose cross-attention is drawn (from 0)");
  return cli.run(argc, argv);
}

}  // namespace posgrad::transduction_app

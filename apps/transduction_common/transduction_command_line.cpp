// The transduction apps' command line (see transduction_command_line.h).
#include "apps/transduction_common/transduction_command_line.h"


namespace posgrad::transduction_app {

using namespace posgrad::apps;

int run_transduction_app(int argc, char** argv, Settings& settings, const TransductionApp& app) {
  AppCommandLine cli(app.name, app.description, settings);
  cli.on_train([&](const TrainRequest& request) { train(app.experiment(), settings, request); });

  std::string run_dir, which = "best", split = "test";
  cli.add_job("eval", "score a run's checkpoint on the dev or the test split",
              [&] {
                load_run_settings(settings, run_dir);
                eval(app.experiment(), run_dir, which, split);
              })
      .required_path("run", run_dir, "the run folder")
      .choice("--checkpoint", which, {"best", "latest"}, "which checkpoint (best: the lowest dev loss)")
      .choice("--split", split, {"dev", "test"}, "the split scored");

  std::string decode_run, decode_which = "best", file;
  std::vector<std::string> inputs;
  cli.add_job("decode", app.decode_help, [&] { app.decode(decode_run, decode_which, inputs, file); })
      .required_path("run", decode_run, "the run folder")
      .texts("--input", inputs, app.input_help)
      .path("--file", file, app.file_help)
      .choice("--checkpoint", decode_which, {"best", "latest"}, "which checkpoint");

  FiguresRequest figures;
  cli.add_job("figures",
              "draw a run's learning curves, APE's rotation angles and the cross-attention on a test example",
              [&] { app.figures(figures); })
      .required_path("run", figures.run_dir, "the run folder")
      .choice("--checkpoint", figures.which, {"best", "latest"}, "which checkpoint")
      .integer("--example", figures.example, "the test example whose cross-attention is drawn (from 0)");
  return cli.run(argc, argv);
}

}  // namespace posgrad::transduction_app

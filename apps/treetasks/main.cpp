// treetasks: the APE paper's tree transduction tasks (COPY, ROTATE, C3, TREE-OPS, breadth- or
// depth-first output; spec ape.md 7.1, 7.3, Table 2(b)) with an encoder-decoder and tree APE on
// heap positions or a flattened baseline. Jobs:
//   treetasks [train] --config configs/treetasks/<size>.yaml --config configs/treetasks/schemes/<scheme>.yaml
//             [-Dkey=value]... [--out RUN]                                     train
//   treetasks train --resume RUN                                              continue
//   treetasks eval RUN [--checkpoint best|latest] [--split dev|test]          score
//   treetasks decode RUN --input "(11 (12 1 2) 3)" [--file TREES]             try the model
//   treetasks figures RUN [--checkpoint best|latest] [--example K]            draw (treetasks_figures.h)
// (apps/transduction_common/transduction_command_line.h). `treetasks --help` lists every setting
// with its type, default and meaning.
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).
#include "apps/transduction_common/transduction_command_line.h"
#include "apps/treetasks/treetasks_decode.h"
#include "apps/treetasks/treetasks_experiment.h"
#include "apps/treetasks/treetasks_figures.h"

using namespace posgrad;
using namespace posgrad::treetasks_app;

int main(int argc, char** argv) {
  TreetasksSettings c;
  apps::Settings settings;
  declare(settings, c);
  transduction_app::TransductionApp app{
      .name = "treetasks",
      .description = "treetasks: tree COPY, ROTATE, C3 and TREE-OPS with an encoder-decoder and tree APE",
      .experiment = [&] { return experiment(c); },
      .decode = [&](const std::string& run, const std::string& which, const std::vector<std::string>& inputs,
                    const std::string& file) { decode(c, settings, run, which, inputs, file); },
      .decode_help = "decode trees with a trained run and say whether each output is right",
      .input_help = "a tree in the bracketed form, e.g. \"(11 (12 1 2) 3)\" (repeatable)",
      .file_help = "a file of trees, one a line",
      .figures = [&](const transduction_app::FiguresRequest& request) { draw_figures(c, settings, request); }};
  return transduction_app::run_transduction_app(argc, argv, settings, app);
}

// seqtasks: the APE paper's sequence transduction tasks (COPY, REPEAT, REVERSE; spec ape.md 7.1,
// 7.2, Table 2(a)) with an encoder-decoder transformer and any positional scheme. Jobs:
//   seqtasks [train] --config configs/seqtasks/<size>.yaml --config configs/seqtasks/schemes/<scheme>.yaml
//            [-Dkey=value]... [--out RUN]                                      train
//   seqtasks train --resume RUN                                               continue
//   seqtasks eval RUN [--checkpoint best|latest] [--split dev|test]           score
//   seqtasks decode RUN --input "3 5 7 11" [--file WORDS] [--checkpoint ...]  try the model
//   seqtasks figures RUN [--checkpoint best|latest] [--example K]             draw (seqtasks_figures.h)
// (apps/transduction_common/transduction_command_line.h). `seqtasks --help` lists every setting
// with its type, default and meaning.
// Deliberately does not: run sweeps (posgrad-sweep runs this executable once per grid cell).

#include "apps/seqtasks/seqtasks_decode.h"
#include "apps/seqtasks/seqtasks_experiment.h"
#include "apps/seqtasks/seqtasks_figures.h"
#include "apps/transduction_common/transduction_command_line.h"

using namespace posgrad;
using namespace posgrad::seqtasks_app;

int main(int argc, char** argv) {
  SeqtasksSettings c;
  apps::Settings settings;
  declare(settings, c);
  transduction_app::TransductionApp app{
      .name = "seqtasks",
      .description = "seqtasks: COPY, REPEAT and REVERSE with an encoder-decoder and APE or another scheme",
      .experiment = [&] { return experiment(c); },
      .decode = [&](const std::string& run, const std::string& which, const std::vector<std::string>& inputs,
                    const std::string& file) { decode(c, settings, run, which, inputs, file); },
      .decode_help = "decode words with a trained run and say whether each output is right",
      .input_help = "a word: integer tokens separated by spaces, e.g. \"3 5 7 11\" (repeatable)",
      .file_help = "a file of words, one a line",
      .figures = [&](const transduction_app::FiguresRequest& request) { draw_figures(c, settings, request); }};
  return transduction_app::run_transduction_app(argc, argv, settings, app);
}

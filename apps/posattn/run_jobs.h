// The jobs of the posattn app: train (the thesis protocol, one metrics line per epoch), eval (a
// checkpoint on the validation split or the official test set, with a confusion matrix) and
// figures (figures.h). main.cpp wires them to the command line.
//
// Deliberately does not: parse the command line (main.cpp) or draw (figures.h).
#pragma once

#include <string>

#include "apps/common/cli.h"
#include "apps/posattn/posattn_settings.h"

namespace posgrad::posattn_app {

void train(const PosattnSettings& c, const apps::Settings& settings, const apps::TrainRequest& request);
// Scores `which` (best | latest) of run_dir on split (val | test); prints accuracy, loss and the
// confusion matrix, and writes run_dir/eval-<split>-<which>.json.
void eval(PosattnSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
          const std::string& split);

}  // namespace posgrad::posattn_app

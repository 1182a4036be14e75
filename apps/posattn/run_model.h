// A finished (or stopped) run's model, rebuilt from its config.yaml settings and loaded from one
// of its checkpoints (best | latest), for eval and figures.
//
// Deliberately does not: load the optimizer, or train.
#pragma once

#include <memory>
#include <string>

#include "apps/posattn/image_data.h"
#include "apps/posattn/posattn_settings.h"
#include "attention/posattn_classifier.h"

namespace posgrad::posattn_app {

struct LoadedModel {
  std::unique_ptr<PosattnClassifier> model;
  std::string folder;  // the step folder loaded, e.g. "step-000001000"
};

// `c` must hold the run's settings (load_run_settings). Errors name the missing pointer or folder.
LoadedModel load_run_model(const PosattnSettings& c, const std::string& run_dir, const std::string& which,
                           const ImageSet& set);

}  // namespace posgrad::posattn_app

// Loading a run's model (see run_model.h).
#include "apps/posattn/run_model.h"

#include <filesystem>

#include "apps/common/run_checkpoints.h"
#include "nn/checkpoint.h"
#include "tensor/error.h"

namespace posgrad::posattn_app {

LoadedModel load_run_model(const PosattnSettings& c, const std::string& run_dir, const std::string& which,
                           const ImageSet& set) {
  const std::filesystem::path checkpoint = apps::run_checkpoint_folder(run_dir, which);
  Generator gen(static_cast<uint64_t>(c.seed));
  LoadedModel out;
  out.model = std::make_unique<PosattnClassifier>(model_config(c, set.structure, set.channels, set.classes), gen);
  out.model->load_state_dict(load_checkpoint(checkpoint).model);
  out.folder = checkpoint.filename().string();
  return out;
}

}  // namespace posgrad::posattn_app

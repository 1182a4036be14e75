// Loading a run's model (see run_model.h).
#include "apps/posattn/run_model.h"

#include <filesystem>

#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "tensor/error.h"

namespace posgrad::posattn_app {

LoadedModel load_run_model(const PosattnSettings& c, const std::string& run_dir, const std::string& which,
                           const ImageSet& set) {
  const std::filesystem::path pointer = std::filesystem::path(run_dir) / "checkpoints" / which;
  if (!std::filesystem::exists(pointer))
    fail("run '{}' has no '{}' checkpoint ('{}' is missing; has the run finished an epoch?)", run_dir, which,
         pointer.string());
  std::string folder = read_file_bytes(pointer);
  while (!folder.empty() && (folder.back() == '\n' || folder.back() == '\r')) folder.pop_back();
  Generator gen(static_cast<uint64_t>(c.seed));
  LoadedModel out;
  out.model = std::make_unique<PosattnClassifier>(model_config(c, set.structure, set.channels, set.classes), gen);
  out.model->load_state_dict(load_checkpoint(pointer.parent_path() / folder).model);
  out.folder = folder;
  return out;
}

}  // namespace posgrad::posattn_app

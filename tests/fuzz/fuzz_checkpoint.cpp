// Fuzz harness: load_checkpoint on a folder whose files come from the input. The input is split
// at kFileSeparator (fuzz_support.h) into state.json, model.safetensors and
// optimizer.safetensors, in that order; a missing part means a missing file, parts after the
// third are ignored. A checkpoint that loads must survive save_checkpoint + load_checkpoint
// unchanged (step, generator state, extra, optimizer kind, hyperparameters, every tensor).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "nn/checkpoint.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using posgrad::fuzz::fuzz_finding;

void check_same_tensors(const posgrad::NamedTensors& a, const posgrad::NamedTensors& b, const char* what) {
  if (a.size() != b.size()) fuzz_finding(std::string("checkpoint round trip changed the number of ") + what);
  for (size_t i = 0; i < a.size(); ++i) {
    const posgrad::Tensor& ta = a[i].second;
    const posgrad::Tensor& tb = b[i].second;
    if (a[i].first != b[i].first || ta.dtype() != tb.dtype() || ta.shape() != tb.shape())
      fuzz_finding(std::string("checkpoint round trip changed ") + what + " '" + a[i].first + "'");
    const size_t bytes = static_cast<size_t>(ta.numel()) * static_cast<size_t>(posgrad::dtype_size(ta.dtype()));
    if (bytes > 0 && std::memcmp(ta.raw_data(), tb.raw_data(), bytes) != 0)
      fuzz_finding(std::string("checkpoint round trip changed the data of ") + what + " '" + a[i].first + "'");
  }
}

void check_same(const posgrad::Checkpoint& a, const posgrad::Checkpoint& b) {
  if (a.step != b.step || a.rng_seed != b.rng_seed || a.rng_offset != b.rng_offset || a.extra_json != b.extra_json ||
      a.optimizer.kind != b.optimizer.kind)
    fuzz_finding("checkpoint round trip changed the step, generator state, extra or optimizer kind");
  if (a.optimizer.hyper.size() != b.optimizer.hyper.size())
    fuzz_finding("checkpoint round trip changed the hyperparameters");
  for (const auto& [key, value] : a.optimizer.hyper) {
    const auto it = b.optimizer.hyper.find(key);
    const bool same = it != b.optimizer.hyper.end() &&
                      (std::isnan(value) ? std::isnan(it->second) : value == it->second);
    if (!same) fuzz_finding("checkpoint round trip changed hyperparameter '" + key + "'");
  }
  check_same_tensors(a.model, b.model, "model tensor");
  check_same_tensors(a.optimizer.tensors, b.optimizer.tensors, "optimizer tensor");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  static const char* const kFiles[] = {"state.json", "model.safetensors", "optimizer.safetensors"};
  const std::filesystem::path dir = fresh_dir("checkpoint");
  const auto parts = split_files(as_text(data, size));
  for (size_t i = 0; i < parts.size() && i < 3; ++i) write_file(dir / kFiles[i], parts[i]);

  posgrad::Checkpoint loaded;
  if (!expect_error_or_success([&] { loaded = posgrad::load_checkpoint(dir); })) return 0;
  for (const auto& [name, tensor] : loaded.model) check_representable(tensor, "load_checkpoint model '" + name + "'");
  for (const auto& [name, tensor] : loaded.optimizer.tensors)
    check_representable(tensor, "load_checkpoint optimizer '" + name + "'");
  const std::filesystem::path again = fresh_dir("checkpoint-again");
  // save_checkpoint refuses what its writers refuse (e.g. an empty tensor name): not a finding.
  if (!expect_error_or_success([&] { posgrad::save_checkpoint(again, loaded); })) return 0;
  try {
    check_same(loaded, posgrad::load_checkpoint(again));
  } catch (const posgrad::Error& e) {
    fuzz_finding(std::string("save_checkpoint wrote a checkpoint load_checkpoint rejects: ") + e.what());
  }
  return 0;
}

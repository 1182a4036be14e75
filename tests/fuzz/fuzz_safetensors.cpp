// Fuzz harness: the safetensors decoder (decode_safetensors) on the input bytes as a file's
// content. A file it accepts must survive a round trip: encode_safetensors of what was decoded
// (when the encoder accepts those names; it refuses e.g. an empty name, which the decoder takes)
// decodes to the same names, dtypes, shapes, element bytes and metadata. Every decoded shape must
// have strides that fit in int64 (check_representable).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "nn/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

size_t byte_size(const posgrad::Tensor& t) {
  return static_cast<size_t>(t.numel()) * static_cast<size_t>(posgrad::dtype_size(t.dtype()));
}

void check_same(const posgrad::SafetensorsContents& a, const posgrad::SafetensorsContents& b) {
  using posgrad::fuzz::fuzz_finding;
  if (a.metadata != b.metadata) fuzz_finding("safetensors round trip changed the metadata");
  if (a.tensors.size() != b.tensors.size()) fuzz_finding("safetensors round trip changed the tensor count");
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [name_a, ta] = a.tensors[i];
    const auto& [name_b, tb] = b.tensors[i];
    if (name_a != name_b || ta.dtype() != tb.dtype() || ta.shape() != tb.shape())
      fuzz_finding("safetensors round trip changed tensor '" + name_a + "'");
    if (byte_size(ta) > 0 && std::memcmp(ta.raw_data(), tb.raw_data(), byte_size(ta)) != 0)
      fuzz_finding("safetensors round trip changed the data of tensor '" + name_a + "'");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  posgrad::SafetensorsContents decoded;
  if (!expect_error_or_success([&] { decoded = posgrad::decode_safetensors(as_text(data, size), "fuzz input"); }))
    return 0;
  for (const auto& [name, tensor] : decoded.tensors) check_representable(tensor, "decode_safetensors '" + name + "'");
  std::string encoded;
  if (!expect_error_or_success([&] { encoded = posgrad::encode_safetensors(decoded.tensors, decoded.metadata); }))
    return 0;
  try {
    check_same(decoded, posgrad::decode_safetensors(encoded, "re-encoded fuzz input"));
  } catch (const posgrad::Error& e) {
    fuzz_finding(std::string("encode_safetensors wrote a file its decoder rejects: ") + e.what());
  }
  return 0;
}

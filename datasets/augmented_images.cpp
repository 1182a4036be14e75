// AugmentedImages (see augmented_images.h).
#include "datasets/augmented_images.h"

#include "datasets/autoaugment.h"
#include "datasets/byte_image.h"
#include "datasets/seeding.h"
#include "tensor/error.h"

namespace posgrad {

AugmentedImages::AugmentedImages(std::shared_ptr<const Dataset> base, AugmentSettings settings, uint64_t seed,
                                 int64_t epoch)
    : base_(std::move(base)), settings_(std::move(settings)),
      epoch_key_(derive_seed(seed, SeedStream::Augment, static_cast<uint64_t>(epoch))) {
  if (!base_) fail("AugmentedImages: the base dataset is null");
  if (settings_.crop_padding < 0) fail("AugmentedImages: crop padding must be >= 0, got {}", settings_.crop_padding);
}

Example AugmentedImages::get(int64_t i) const {
  check_index(i);
  Example e = base_->get(i);
  ByteImage image = byte_image_from_unit(e.input);
  Generator gen(splitmix64(epoch_key_ ^ static_cast<uint64_t>(i)));
  if (settings_.autoaugment) image = apply_cifar10_policy(image, gen);
  if (settings_.crop_padding > 0) {
    const int64_t span = 2 * settings_.crop_padding + 1;
    const auto top = std::min<int64_t>(static_cast<int64_t>(gen.next_uniform() * span), span - 1);
    const auto left = std::min<int64_t>(static_cast<int64_t>(gen.next_uniform() * span), span - 1);
    image = crop_padded(image, settings_.crop_padding, top, left);
  }
  if (settings_.flip && gen.next_uniform() < 0.5) image = flip_horizontal(image);
  return {normalize_image(image, settings_.mean, settings_.std), e.target};
}

}  // namespace posgrad

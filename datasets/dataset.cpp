// Dataset, TensorDataset, SubsetDataset and collate (see dataset.h).
#include "datasets/dataset.h"

#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {
Tensor stack_field(const std::vector<Example>& examples, bool targets) {
  const auto field = [&](size_t i) -> const Tensor& {
    return targets ? examples[i].target : examples[i].input;
  };
  const char* name = targets ? "target" : "input";
  const Tensor& first = field(0);
  std::vector<Tensor> parts;
  parts.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& t = field(i);
    if (t.defined() != first.defined())
      fail("collate: example {} has {} {} but example 0 has {}", i,
           t.defined() ? "a" : "no", name, first.defined() ? "one" : "none");
    if (!t.defined()) continue;
    if (t.shape() != first.shape() || t.dtype() != first.dtype())
      fail("collate: example {} has {} {} but example 0 has {}", i, name, t.describe(),
           first.describe());
    parts.push_back(t);
  }
  if (!first.defined()) return Tensor();
  return stack(parts, 0);
}
}  // namespace

Batch collate(const std::vector<Example>& examples) {
  if (examples.empty()) fail("collate: no examples to stack");
  return Batch{stack_field(examples, false), stack_field(examples, true)};
}

void Dataset::check_index(int64_t i) const {
  if (i < 0 || i >= size()) fail("dataset: index {} is out of range [0, {})", i, size());
}

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  return collate(examples);
}

// ------------------------------------------------------------ TensorDataset

TensorDataset::TensorDataset(Tensor inputs, Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (!inputs_.defined()) fail("TensorDataset: inputs are undefined");
  if (inputs_.dim() < 1) fail("TensorDataset: inputs {} need a leading example axis", inputs_.describe());
  if (targets_.defined() && (targets_.dim() < 1 || targets_.size(0) != inputs_.size(0)))
    fail("TensorDataset: inputs {} and targets {} differ in the number of examples",
         inputs_.describe(), targets_.describe());
}

Example TensorDataset::get(int64_t i) const {
  check_index(i);
  return Example{inputs_.select(0, i), targets_.defined() ? targets_.select(0, i) : Tensor()};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) fail("TensorDataset: empty batch requested");
  for (int64_t i : indices) check_index(i);
  const Tensor idx = Tensor::from_vector(indices, {static_cast<int64_t>(indices.size())});
  return Batch{index_select(inputs_, 0, idx),
               targets_.defined() ? index_select(targets_, 0, idx) : Tensor()};
}

// ------------------------------------------------------------ SubsetDataset

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  if (!base_) fail("SubsetDataset: no base dataset");
  const int64_t n = base_->size();
  for (size_t k = 0; k < indices_.size(); ++k)
    if (indices_[k] < 0 || indices_[k] >= n)
      fail("SubsetDataset: index {} (position {}) is out of range [0, {})", indices_[k], k, n);
}

Example SubsetDataset::get(int64_t i) const {
  check_index(i);
  return base_->get(indices_[static_cast<size_t>(i)]);
}

Batch SubsetDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i);
    mapped.push_back(indices_[static_cast<size_t>(i)]);
  }
  return base_->get_batch(mapped);
}

}  // namespace posgrad

// Dataset: random access to examples, and `collate`, which stacks examples into a batch.
//
// An Example is a fixed pair {input, target} of Tensors rather than a map of named tensors: every
// task in this project is supervised with one input and one target, a struct is checked by the
// compiler, and a batch is simply an Example with a leading batch axis B (`using Batch = Example`).
// `target` may be undefined for unlabelled data; it is then undefined in the batch too.
//
// Shapes: get(i) -> input [...], target [...]; get_batch(indices) -> input [B, ...],
// target [B, ...] with B = indices.size().
//
// This file deliberately does no I/O, no shuffling and no threading (see data_loader.h).
// Datasets must be safe to read from one thread other than the one that built them (the
// DataLoader's prefetch worker); the ones here are immutable after construction.
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

struct Example {
  Tensor input;   // one example: [...]; in a batch: [B, ...]
  Tensor target;  // one example: [...]; in a batch: [B, ...]; may be undefined
};
using Batch = Example;

// Stacks examples along a new leading axis: input [B, ...], target [B, ...]. All inputs (and all
// targets) must share shape and dtype; an empty list or a mismatch is an Error naming the index.
Batch collate(const std::vector<Example>& examples);

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Example i, 0 <= i < size(); out-of-range is an Error. May return views of shared storage:
  // treat the tensors as read-only.
  virtual Example get(int64_t i) const = 0;
  // The batch of the given examples, in that order. The default calls get() per index and
  // collates; tensor-backed datasets override it with one index_select per tensor.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;

 protected:
  void check_index(int64_t i) const;  // Error unless 0 <= i < size()
};

// A dataset over whole tensors: example i is (inputs[i], targets[i]).
// inputs [n, ...], targets [n, ...] (or undefined); both must share the leading size n.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor inputs, Tensor targets);
  int64_t size() const override { return inputs_.size(0); }
  Example get(int64_t i) const override;  // views: inputs[i], targets[i]
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // copies (index_select)
  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor inputs_, targets_;
};

// The examples base[indices[0]], base[indices[1]], ... without copying any data.
class SubsetDataset : public Dataset {
 public:
  SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t i) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<int64_t>& indices() const { return indices_; }
  const std::shared_ptr<const Dataset>& base() const { return base_; }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

}  // namespace posgrad

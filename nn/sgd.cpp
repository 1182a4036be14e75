// SGD: see sgd.h for the rule.
#include "nn/sgd.h"

#include "tensor/ops.h"

namespace posgrad {

SGD::SGD(std::vector<Variable> params, const SGDOptions& o)
    : Optimizer(std::move(params), o.lr),
      momentum_(o.momentum),
      dampening_(o.dampening),
      weight_decay_(o.weight_decay),
      nesterov_(o.nesterov),
      buffers_(params_.size()) {
  validate();
}

void SGD::validate() const {
  if (!(momentum_ >= 0)) fail("sgd: invalid momentum {}", momentum_);
  if (!(weight_decay_ >= 0)) fail("sgd: invalid weight_decay {}", weight_decay_);
  if (nesterov_ && (momentum_ <= 0 || dampening_ != 0))
    fail("sgd: Nesterov momentum needs momentum > 0 and dampening == 0 (got momentum {}, dampening {})",
         momentum_, dampening_);
}

void SGD::update() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Variable& var = params_[i];
    if (!var.grad().defined()) continue;
    Tensor& p = var.mutable_value();
    Tensor d = var.grad();
    if (weight_decay_ != 0) d = d + p * weight_decay_;
    if (momentum_ != 0) {
      Tensor& buf = buffers_[i];
      buf = buf.defined() ? buf * momentum_ + d * (1.0 - dampening_) : d.clone();
      d = nesterov_ ? d + buf * momentum_ : buf;
    }
    p.copy_(p + d * -lr_);
  }
}

void SGD::export_state(OptimizerState& out) const {
  out.hyper["momentum"] = momentum_;
  out.hyper["dampening"] = dampening_;
  out.hyper["weight_decay"] = weight_decay_;
  out.hyper["nesterov"] = nesterov_ ? 1.0 : 0.0;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].defined()) out.tensors.emplace_back(key("momentum", i), buffers_[i].clone());
}

void SGD::import_state(const OptimizerState& in) {
  momentum_ = hyper(in, "momentum");
  dampening_ = hyper(in, "dampening");
  weight_decay_ = hyper(in, "weight_decay");
  nesterov_ = hyper(in, "nesterov") != 0.0;
  validate();
  std::vector<Tensor> buffers(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) buffers[i] = find_buffer(in, key("momentum", i), i);
  buffers_ = std::move(buffers);
}

}  // namespace posgrad

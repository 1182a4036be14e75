// Sequential (see sequential.h).
#include "nn/sequential.h"

namespace posgrad {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) add(m);
}

Sequential& Sequential::add(std::shared_ptr<Module> module) { return add(std::to_string(modules_.size()), std::move(module)); }

Sequential& Sequential::add(const std::string& name, std::shared_ptr<Module> module) {
  modules_.push_back(register_module(name, std::move(module)));
  return *this;
}

Variable Sequential::forward(const Variable& x) {
  Variable h = x;
  for (auto& m : modules_) h = m->forward(h);
  return h;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t i) const {
  if (i >= modules_.size()) fail("Sequential: index {} is out of range (size {})", i, modules_.size());
  return modules_[i];
}

}  // namespace posgrad

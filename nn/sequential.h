// Sequential: a list of modules run one after the other, y = m_k(...m_1(m_0(x))), through each
// child's virtual forward(Variable). Children are named "0", "1", ... (or given names), so the
// parameter names ("0.weight", "3.bias") are those of an equivalent PyTorch nn.Sequential.
//
// Deliberately not here: branching or multi-input children (write a Module with its own forward).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace posgrad {

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);

  // Appends a child named by its position ("0", "1", ...), or by `name`. Returns *this.
  Sequential& add(std::shared_ptr<Module> module);
  Sequential& add(const std::string& name, std::shared_ptr<Module> module);

  Variable forward(const Variable& x) override;

  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace posgrad

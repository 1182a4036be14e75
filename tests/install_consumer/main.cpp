// Uses the installed posgrad: one gradient step through the public headers.
#include "posgrad.h"

int main() {
  using namespace posgrad;
  Variable w(Tensor::full({2, 2}, 0.5), true);
  Variable loss = sum(square(matmul(w, Variable(Tensor::ones({2, 1})))));
  loss.backward();
  fmt::print("consumer: loss {} grad {}\n", loss.item(), w.grad().to_vector<float>()[0]);
  return loss.item() == 2.0 && w.grad().to_vector<float>()[0] == 2.0f ? 0 : 1;
}

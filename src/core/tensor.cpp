// core/tensor.cpp — formatting of tensor shapes for error messages.
#include "core/tensor.h"

namespace fg {

std::string Tensor::shape_string() const {
  std::string out = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace fg

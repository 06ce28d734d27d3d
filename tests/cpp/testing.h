// Helpers shared by the C++ tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>

#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"

namespace opgraph::testing {

// The message of the opgraph::Error that fn throws; a test failure if none.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected opgraph::Error";
  return {};
}

// A path in the temporary folder, unique to this process: ctest runs tests
// in parallel processes.
inline std::string temp_path(const std::string& name) {
  const std::string file = "opgraph_test_" + std::to_string(::getpid()) + "_" + name;
  return (std::filesystem::temp_directory_path() / file).string();
}

// A float32 tensor holding 0, 1, 2, ... in row-major order.
inline Tensor arange(Shape shape) {
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  float* data = t.data_ptr<float>();
  std::iota(data, data + t.numel(), 0.0f);
  return t;
}

}  // namespace opgraph::testing

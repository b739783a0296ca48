#pragma once
// Typing-rule tables for the shape-inference tests: a row is inputs and
// attributes with the result type they give, or the reason they are refused.
// Shared by shape_inference_test.cpp and transformer_typing_test.cpp.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph_error.hpp"
#include "compiler/ir/shape_inference.hpp"

namespace tessera::compiler::typing_rows {

inline TensorType f32(Shape shape) { return {{DType::kF32, 0}, std::move(shape)}; }
inline TensorType f16(Shape shape) { return {{DType::kF16, 0}, std::move(shape)}; }
inline TensorType f8(std::int32_t scale, Shape shape) {
  return {{DType::kF8F143, scale}, std::move(shape)};
}
inline TensorType blocks(Shape shape) { return {kBlockScaledF8, std::move(shape)}; }
inline TensorType u8(Shape shape) { return {{DType::kU8, 0}, std::move(shape)}; }
inline TensorType i32(Shape shape) { return {{DType::kI32, 0}, std::move(shape)}; }
inline TensorType u32(Shape shape) { return {{DType::kU32, 0}, std::move(shape)}; }

struct Row {
  const char* what;
  OpKind kind;
  std::vector<TensorType> inputs;
  Attributes attributes;
  std::optional<TensorType> result;  // nullopt: refused
  const char* message = "";          // for refused rows, a substring of the reason
};

// The row's result type, or its refusal with the reason's substring.
inline void check(const Row& row) {
  SCOPED_TRACE(row.what);
  if (row.result) {
    const auto results = infer_result_types(row.kind, row.inputs, row.attributes);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(format_type(results[0]), format_type(*row.result));
    EXPECT_EQ(results[0], *row.result);
  } else {
    try {
      (void)infer_result_types(row.kind, row.inputs, row.attributes);
      ADD_FAILURE() << "accepted";
    } catch (const GraphError& error) {
      EXPECT_NE(error.message().find(row.message), std::string::npos) << error.message();
    }
  }
}

}  // namespace tessera::compiler::typing_rows

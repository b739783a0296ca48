#pragma once
// Running a RapidCheck property inside a GoogleTest test with Tessera's case
// count rules: RapidCheck's max_success (ctest passes TESSERA_RC_PARAMS,
// default 100) × a per-property weight × TESSERA_PROPERTY_SCALE (default 1,
// for long campaigns). A failure reports the shrunk counterexample and the
// RC_PARAMS="reproduce=…" command that replays exactly that case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace tessera::compiler::testing {

inline int property_scale() {
  const char* text = std::getenv("TESSERA_PROPERTY_SCALE");
  if (text == nullptr || *text == '\0') return 1;
  const int scale = std::atoi(text);
  return scale > 0 ? scale : 1;
}

// Runs a property with RapidCheck's configuration (RC_PARAMS), its case count
// (max_success) multiplied by `weight` (cheap properties run more cases by
// default) and by TESSERA_PROPERTY_SCALE; a failure reports the
// counterexample and the RC_PARAMS that replays it.
template <class Property>
inline void check_scaled(double weight, Property property) {
  using namespace rc::detail;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  const Configuration& config = configuration();
  TestParams params = config.testParams;
  params.maxSuccess = std::max(1, static_cast<int>(params.maxSuccess * weight * property_scale()));
  TestListenerAdapter listener;
  const TestResult result =
      checkProperty(toProperty(property), metadata, params, listener, config.reproduce);
  if (result.is<SuccessResult>()) {
    if (!result.get<SuccessResult>().distribution.empty()) {
      printResultMessage(result, std::cout);
      std::cout << std::endl;
    }
    return;
  }
  std::ostringstream message;
  printResultMessage(result, message);
  if (result.is<FailureResult>()) {
    Configuration replay = config;
    replay.reproduce = {{metadata.id, result.get<FailureResult>().reproduce}};
    message << "\n\nReplay this case: RC_PARAMS=\"" << configToMinimalString(replay)
            << "\" build/tests/compiler/compiler_tests --gtest_filter=" << info->test_suite_name()
            << "." << info->name();
  }
  FAIL() << message.str();
}

}  // namespace tessera::compiler::testing

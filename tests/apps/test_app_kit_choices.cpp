// The settings every app shares through the kit: the device setting (apps/common/device_setting.h)
// and the optimizer choice (apps/common/optimizer_choice.h), each with the error a user gets for
// a bad value.
#include <boost/test/unit_test.hpp>

#include "apps/common/device_setting.h"
#include "apps/common/optimizer_choice.h"
#include "tensor/error.h"
#include "tests/device_support.h"

using namespace posgrad;
using namespace posgrad::apps;

namespace {
bool message_has(const Error& e, const std::string& text) { return std::string(e.what()).find(text) != std::string::npos; }

std::vector<Variable> one_parameter() { return {Variable(Tensor::ones({3}), /*requires_grad=*/true)}; }
}  // namespace

BOOST_AUTO_TEST_SUITE(app_kit_choices)

BOOST_AUTO_TEST_CASE(device_setting_names_what_is_wrong) {
  BOOST_TEST(usable_device("cpu").is_cpu());
  BOOST_CHECK_EXCEPTION(usable_device("gpu"), Error,
                        [](const Error& e) { return message_has(e, "unknown device 'gpu': expected cpu, cuda or cuda:N"); });
  BOOST_CHECK_EXCEPTION(usable_device("cuda:x"), Error, [](const Error& e) { return message_has(e, "unknown device 'cuda:x'"); });
  // No GPU has index 99: the error says how many there are, or why CUDA cannot be used at all.
  BOOST_CHECK_EXCEPTION(usable_device("cuda:99"), Error, [](const Error& e) { return message_has(e, "cuda:99"); });
}

BOOST_AUTO_TEST_CASE(device_setting_without_a_gpu_says_why, *boost::unit_test::precondition(test::GpuAbsent())) {
  BOOST_CHECK_EXCEPTION(usable_device("cuda"), Error,
                        [](const Error& e) { return message_has(e, "CUDA cannot be used: " + cuda_unavailable_reason()); });
}

BOOST_AUTO_TEST_CASE(optimizer_choice_builds_each_kind_with_its_settings) {
  const auto adam = make_optimizer({.kind = "adam", .lr = 0.25}, one_parameter());
  BOOST_TEST(std::string(adam->kind()) == "adam");
  BOOST_TEST(adam->lr() == 0.25);
  BOOST_TEST(adam->state().hyper.at("weight_decay") == 0.0);

  // AdamW keeps its own default decay unless one is given.
  BOOST_TEST(make_optimizer({.kind = "adamw", .lr = 0.1}, one_parameter())->state().hyper.at("weight_decay") == 1e-2);
  const auto adamw = make_optimizer({.kind = "adamw", .lr = 0.1, .weight_decay = 0.3}, one_parameter());
  BOOST_TEST(std::string(adamw->kind()) == "adamw");
  BOOST_TEST(adamw->state().hyper.at("weight_decay") == 0.3);

  const auto sgd = make_optimizer({.kind = "sgd", .lr = 0.5}, one_parameter());
  BOOST_TEST(std::string(sgd->kind()) == "sgd");
  BOOST_TEST(sgd->lr() == 0.5);
  BOOST_TEST(sgd->state().hyper.at("momentum") == 0.9);
  BOOST_TEST(sgd->state().hyper.at("weight_decay") == 0.0);

  const auto adagrad = make_optimizer({.kind = "adagrad", .lr = 0.07, .weight_decay = 0.3, .clip_per_tensor = 0.03}, one_parameter());
  BOOST_TEST(std::string(adagrad->kind()) == "adagrad");
  BOOST_TEST(adagrad->lr() == 0.07);
  BOOST_TEST(adagrad->state().hyper.at("clip_per_tensor") == 0.03);
  BOOST_TEST(adagrad->state().hyper.at("weight_decay") == 0.0);  // the decay is AdamW's alone
}

BOOST_AUTO_TEST_CASE(unknown_optimizer_lists_the_valid_ones) {
  BOOST_CHECK_EXCEPTION(make_optimizer({.kind = "rmsprop", .lr = 0.1}, one_parameter()), Error, [](const Error& e) {
    return message_has(e, "train.optimizer: unknown optimizer 'rmsprop' (valid: adam, adamw, sgd, adagrad)");
  });
}

BOOST_AUTO_TEST_SUITE_END()

// Config: loading typed defaults from YAML, typed overrides, error messages for unknown keys and
// bad values, typed getters, unused keys, and YAML/JSON output.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "apps/common/config.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::TempDir;
using posgrad::Error;
using posgrad::apps::Config;
using posgrad::apps::ConfigType;

namespace {

const char* kYaml = R"(# defaults of a test app
name: count24
seed: 7
train:
  batch_size: 64
  lr: 0.001
  warmup_frac: 1e-3
  use_amp: false
  steps: [100, 200]
  betas: [0.9, 0.999]
  tags: [a, b]
  flags: [true, false]
  label: "123"
model:
  heads: 2
  layer:
    dim: 32
    act: gelu
)";

Config sample() { return Config::parse(kYaml, "test.yaml"); }

// The message of the posgrad::Error thrown by f ("" when nothing is thrown).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(config)

BOOST_AUTO_TEST_CASE(load_infers_types_from_defaults) {
  TempDir dir;
  const fs::path file = dir.path() / "app.yaml";
  std::ofstream(file) << kYaml;
  const Config c = Config::load(file);
  BOOST_TEST(c.source() == file.string());
  BOOST_TEST(c.get<std::string>("name") == "count24");
  BOOST_TEST(c.get<int64_t>("seed") == 7);
  BOOST_TEST(c.get<int>("train.batch_size") == 64);
  BOOST_TEST(c.get<double>("train.lr") == 0.001);
  BOOST_TEST(c.get<double>("train.warmup_frac") == 1e-3);
  BOOST_TEST(c.get<bool>("train.use_amp") == false);
  BOOST_TEST(c.get<std::vector<int64_t>>("train.steps") == std::vector<int64_t>({100, 200}));
  BOOST_TEST(c.get<std::vector<double>>("train.betas") == std::vector<double>({0.9, 0.999}));
  BOOST_TEST(c.get<std::vector<std::string>>("train.tags") == std::vector<std::string>({"a", "b"}));
  BOOST_TEST(c.get<std::vector<bool>>("train.flags") == std::vector<bool>({true, false}));
  BOOST_TEST(c.get<std::string>("train.label") == "123");  // quoted: a string
  BOOST_TEST(c.get<int>("model.layer.dim") == 32);
  BOOST_TEST(c.get<std::string>("model.layer.act") == "gelu");

  BOOST_TEST(static_cast<int>(c.type_of("train.batch_size")) == static_cast<int>(ConfigType::Int));
  BOOST_TEST(static_cast<int>(c.type_of("train.warmup_frac")) == static_cast<int>(ConfigType::Double));
  BOOST_TEST(static_cast<int>(c.type_of("train.label")) == static_cast<int>(ConfigType::String));
  const std::vector<std::string> keys = c.keys();
  BOOST_REQUIRE(keys.size() == 14u);
  BOOST_TEST(keys.front() == "name");
  BOOST_TEST(keys.back() == "model.layer.act");
  BOOST_TEST(c.has("train.lr"));
  BOOST_TEST(!c.has("train"));
  BOOST_TEST(c.has_section("train"));
  BOOST_TEST(c.has_section("model.layer"));
}

BOOST_AUTO_TEST_CASE(missing_file_is_an_error) {
  const std::string msg = error_of([] { Config::load("/nonexistent/posgrad/app.yaml"); });
  BOOST_TEST(contains(msg, "/nonexistent/posgrad/app.yaml"));
}

BOOST_AUTO_TEST_CASE(overrides_keep_the_type_of_the_default) {
  Config c = sample();
  c.apply_override("train.batch_size=32");
  c.apply_override("train.lr=1e-3");
  c.apply_override("seed = 11");
  c.apply_override("train.use_amp=yes");
  c.apply_override("name=hello world");
  c.apply_override("train.steps=[1,2,3]");
  c.apply_override("train.betas=0.5,0.25");
  c.apply_override("train.tags=[x, 'y,z']");
  c.apply_override("train.flags=[]");
  c.apply_override("model.layer.act=\"relu\"");
  c.apply_override("train.label=7");
  BOOST_TEST(c.get<int64_t>("train.batch_size") == 32);
  BOOST_TEST(c.get<double>("train.lr") == 1e-3);
  BOOST_TEST(c.get<int64_t>("seed") == 11);
  BOOST_TEST(c.get<bool>("train.use_amp") == true);
  BOOST_TEST(c.get<std::string>("name") == "hello world");
  BOOST_TEST(c.get<std::vector<int64_t>>("train.steps") == std::vector<int64_t>({1, 2, 3}));
  BOOST_TEST(c.get<std::vector<double>>("train.betas") == std::vector<double>({0.5, 0.25}));
  BOOST_TEST(c.get<std::vector<std::string>>("train.tags") ==
             std::vector<std::string>({"x", "y,z"}));
  BOOST_TEST(c.get<std::vector<bool>>("train.flags").empty());
  BOOST_TEST(c.get<std::string>("model.layer.act") == "relu");
  BOOST_TEST(c.get<std::string>("train.label") == "7");
  BOOST_TEST(static_cast<int>(c.type_of("train.batch_size")) == static_cast<int>(ConfigType::Int));

  // A float key takes an integer written without a point.
  c.apply_override("train.lr=3");
  BOOST_TEST(c.get<double>("train.lr") == 3.0);
  BOOST_TEST(static_cast<int>(c.type_of("train.lr")) == static_cast<int>(ConfigType::Double));

  for (const char* t : {"true", "1", "yes", "on", "TRUE"}) {
    c.set_from_string("train.use_amp", t);
    BOOST_TEST(c.get<bool>("train.use_amp") == true);
  }
  for (const char* f : {"false", "0", "no", "off", "False"}) {
    c.set_from_string("train.use_amp", f);
    BOOST_TEST(c.get<bool>("train.use_amp") == false);
  }
  const std::vector<std::string> changed = c.overridden_keys();
  BOOST_TEST(changed.size() == 11u);
  BOOST_TEST(c.default_string("train.batch_size") == "64");
  BOOST_TEST(c.value_string("train.batch_size") == "32");
}

BOOST_AUTO_TEST_CASE(bad_values_name_key_value_and_type) {
  Config c = sample();
  std::string msg = error_of([&] { c.apply_override("train.batch_size=3.5"); });
  BOOST_TEST(contains(msg, "train.batch_size"));
  BOOST_TEST(contains(msg, "3.5"));
  BOOST_TEST(contains(msg, "integer"));
  BOOST_TEST(c.get<int64_t>("train.batch_size") == 64);  // unchanged

  msg = error_of([&] { c.apply_override("train.lr=fast"); });
  BOOST_TEST(contains(msg, "train.lr"));
  BOOST_TEST(contains(msg, "fast"));
  BOOST_TEST(contains(msg, "float"));

  msg = error_of([&] { c.apply_override("train.use_amp=maybe"); });
  BOOST_TEST(contains(msg, "train.use_amp"));
  BOOST_TEST(contains(msg, "maybe"));
  BOOST_TEST(contains(msg, "bool"));

  msg = error_of([&] { c.apply_override("train.steps=[1,two,3]"); });
  BOOST_TEST(contains(msg, "train.steps"));
  BOOST_TEST(contains(msg, "two"));
  BOOST_TEST(contains(msg, "list of integers"));

  msg = error_of([&] { c.apply_override("seed=99999999999999999999999"); });
  BOOST_TEST(contains(msg, "seed"));

  msg = error_of([&] { c.apply_override("train.batch_size"); });
  BOOST_TEST(contains(msg, "no '='"));
  msg = error_of([&] { c.apply_override("=3"); });
  BOOST_TEST(contains(msg, "empty key"));
}

BOOST_AUTO_TEST_CASE(unknown_keys_name_the_key_and_its_neighbours) {
  Config c = sample();
  std::string msg = error_of([&] { c.apply_override("train.batchsize=3"); });
  BOOST_TEST(contains(msg, "train.batchsize"));
  BOOST_TEST(contains(msg, "did you mean 'train.batch_size'"));
  BOOST_TEST(contains(msg, "train.lr"));  // a sibling
  BOOST_TEST(contains(msg, "test.yaml"));

  msg = error_of([&] { c.apply_override("lr=0.1"); });  // same last name in a section
  BOOST_TEST(contains(msg, "'lr'"));
  BOOST_TEST(contains(msg, "train.lr"));
  BOOST_TEST(contains(msg, "Top-level keys"));

  msg = error_of([&] { c.apply_override("model.layer.width=3"); });
  BOOST_TEST(contains(msg, "model.layer.width"));
  BOOST_TEST(contains(msg, "model.layer.dim"));

  msg = error_of([&] { c.apply_override("model=3"); });  // a section, not a value
  BOOST_TEST(contains(msg, "section"));
  BOOST_TEST(contains(msg, "model.heads"));
  BOOST_TEST(contains(msg, "model.layer.*"));

  msg = error_of([&] { c.apply_override("optimizer.lr=3"); });
  BOOST_TEST(contains(msg, "optimizer.lr"));
  BOOST_TEST(contains(msg, "train.*"));
}

BOOST_AUTO_TEST_CASE(getters_check_key_and_type) {
  const Config c = sample();
  std::string msg = error_of([&] { c.get<int>("train.missing"); });
  BOOST_TEST(contains(msg, "train.missing"));
  msg = error_of([&] { c.get<std::string>("train.batch_size"); });
  BOOST_TEST(contains(msg, "train.batch_size"));
  BOOST_TEST(contains(msg, "int"));
  msg = error_of([&] { c.get<int64_t>("train.lr"); });
  BOOST_TEST(contains(msg, "train.lr"));
  msg = error_of([&] { c.get<std::vector<int64_t>>("train.betas"); });
  BOOST_TEST(contains(msg, "train.betas"));
  // Reading an int as a float is fine (no information is lost).
  BOOST_TEST(c.get<double>("seed") == 7.0);
  BOOST_TEST(c.get<std::vector<double>>("train.steps") == std::vector<double>({100.0, 200.0}));
  BOOST_TEST(c.get<float>("train.lr") == 0.001f);
  BOOST_TEST(c.get<std::size_t>("seed") == 7u);

  Config d = Config::parse("offset: -3\nbig: 5000000000\n");
  msg = error_of([&] { d.get<std::size_t>("offset"); });
  BOOST_TEST(contains(msg, "offset"));
  msg = error_of([&] { d.get<int>("big"); });
  BOOST_TEST(contains(msg, "big"));
  BOOST_TEST(d.get<int64_t>("big") == 5000000000LL);
}

BOOST_AUTO_TEST_CASE(unused_keys_lists_what_was_never_read) {
  const Config c = sample();
  BOOST_TEST(c.unused_keys().size() == c.keys().size());
  c.get<int>("train.batch_size");
  c.get<std::string>("name");
  const std::vector<std::string> unused = c.unused_keys();
  BOOST_TEST(unused.size() == c.keys().size() - 2);
  for (const std::string& k : unused) {
    BOOST_TEST(k != "train.batch_size");
    BOOST_TEST(k != "name");
  }
}

BOOST_AUTO_TEST_CASE(yaml_output_round_trips) {
  Config c = Config::parse(std::string(kYaml) +
                           "tricky:\n  looks_bool: \"true\"\n  looks_null: \"~\"\n  empty: \"\"\n"
                           "  whole: 2.0\n  huge: 1.0e+300\n  inf: .inf\n  colon: \"a: b\"\n"
                           "  items: [\"1\", \"x, y\", \"\"]\n");
  c.apply_override("train.lr=0.0003");
  const Config back = Config::parse(c.to_yaml(), "round trip");
  BOOST_REQUIRE(back.keys() == c.keys());
  for (const std::string& k : c.keys()) {
    BOOST_TEST(static_cast<int>(back.type_of(k)) == static_cast<int>(c.type_of(k)), k);
    BOOST_TEST(back.value_string(k) == c.value_string(k), k);
  }
  BOOST_TEST(back.get<double>("train.lr") == 0.0003);
  BOOST_TEST(back.get<std::string>("tricky.looks_bool") == "true");
  BOOST_TEST(back.get<std::string>("tricky.empty") == "");
  BOOST_TEST(back.get<double>("tricky.whole") == 2.0);
  BOOST_TEST(std::isinf(back.get<double>("tricky.inf")));
  BOOST_TEST(back.get<std::string>("tricky.colon") == "a: b");
  BOOST_TEST(back.get<std::vector<std::string>>("tricky.items") ==
             std::vector<std::string>({"1", "x, y", ""}));
}

BOOST_AUTO_TEST_CASE(json_output_is_nested_and_typed) {
  const Config c = sample();
  const nlohmann::json j = c.to_json();
  BOOST_TEST(j["train"]["batch_size"].is_number_integer());
  BOOST_TEST(j["train"]["batch_size"].get<int>() == 64);
  BOOST_TEST(j["train"]["lr"].is_number_float());
  BOOST_TEST(j["train"]["use_amp"].is_boolean());
  BOOST_TEST(j["train"]["label"].get<std::string>() == "123");
  BOOST_TEST(j["model"]["layer"]["dim"].get<int>() == 32);
  BOOST_TEST(j["train"]["flags"].is_array());
  BOOST_TEST(j["train"]["flags"][0].get<bool>() == true);
}

BOOST_AUTO_TEST_CASE(describe_lists_every_key) {
  const Config c = sample();
  const std::string text = c.describe();
  for (const std::string& k : c.keys()) BOOST_TEST(contains(text, k), k);
  BOOST_TEST(contains(text, "list of int"));
  BOOST_TEST(contains(text, "[100, 200]"));
}

BOOST_AUTO_TEST_CASE(bad_yaml_files_are_errors) {
  std::string msg = error_of([] { Config::parse("a: [1, 2\nb: 3\n", "broken.yaml"); });
  BOOST_TEST(contains(msg, "broken.yaml"));
  BOOST_TEST(contains(msg, "line"));
  msg = error_of([] { Config::parse("a:\n  b:\n", "null.yaml"); });
  BOOST_TEST(contains(msg, "a.b"));
  BOOST_TEST(contains(msg, "null"));
  msg = error_of([] { Config::parse("a: []\n", "empty.yaml"); });
  BOOST_TEST(contains(msg, "empty list"));
  msg = error_of([] { Config::parse("- 1\n- 2\n", "seq.yaml"); });
  BOOST_TEST(contains(msg, "top level"));
  msg = error_of([] { Config::parse("a: [{b: 1}]\n", "nested.yaml"); });
  BOOST_TEST(contains(msg, "'a'"));
  BOOST_TEST(Config::parse("", "empty.yaml").empty());
}

BOOST_AUTO_TEST_CASE(mixed_number_lists_are_floats) {
  const Config c = Config::parse("xs: [1, 2.5]\nys: [1, x]\n");
  BOOST_TEST(c.get<std::vector<double>>("xs") == std::vector<double>({1.0, 2.5}));
  BOOST_TEST(c.get<std::vector<std::string>>("ys") == std::vector<std::string>({"1", "x"}));
}

BOOST_AUTO_TEST_SUITE_END()

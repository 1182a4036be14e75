// Settings: typed by the app's declaration (an int stays an int whether a file writes 3 or 3.0 is
// refused), presets and -D overrides, errors naming key, value and expectation, close matches,
// constraints, and config.yaml round trips that repeat a run exactly.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "apps/common/settings.h"
#include "tests/test_support.h"

using posgrad::apps::Settings;
using posgrad::test::check_error;

namespace {

struct ExampleFields {
  int64_t seed = 0;
  bool verbose = false;
  double lr = 0.01;
  double warmup = 0.5;
  int heads = 4;
  std::string optimizer = "adam";
  std::string name = "run";
  std::vector<int64_t> milestones{100, 200};
  std::vector<double> dims{1.5};
  std::vector<std::string> schemes{"siren"};
};

struct Declared {
  ExampleFields e;
  Settings s;
  Declared() {
    s.add("seed", e.seed, "random seed");
    s.add("verbose", e.verbose, "print more");
    s.add("train.lr", e.lr, "learning rate").above(0);
    s.add("train.warmup", e.warmup, "warm-up share").at_least(0).at_most(1);
    s.add("model.heads", e.heads, "attention heads").at_least(1);
    s.add("train.optimizer", e.optimizer, "optimizer").choices({"adam", "adamw", "sgd"});
    s.add("name", e.name, "run name");
    s.add("train.milestones", e.milestones, "LR drops");
    s.add("model.dims", e.dims, "sizes");
    s.add("model.schemes", e.schemes, "schemes").choices({"siren", "rope", "none"});
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(settings)

BOOST_AUTO_TEST_CASE(types_come_from_the_declaration_not_the_spelling) {
  Declared d;
  // A float setting written as an integer is a float; a preset holds only what it changes.
  d.s.load_yaml_text("train:\n  lr: 3\n  warmup: 0\nmodel:\n  heads: 8\n", "preset");
  BOOST_TEST(d.e.lr == 3.0);
  BOOST_TEST(d.e.warmup == 0.0);
  BOOST_TEST(d.e.heads == 8);
  BOOST_TEST(d.e.seed == 0);  // untouched
  // A string setting keeps text that looks like a number or a bool.
  d.s.load_yaml_text("name: 123\n", "preset");
  BOOST_TEST(d.e.name == "123");
  d.s.apply_override("name=true");
  BOOST_TEST(d.e.name == "true");
  BOOST_TEST(d.s.changed_keys() == std::vector<std::string>({"train.lr", "train.warmup", "model.heads", "name"}));
}

BOOST_AUTO_TEST_CASE(overrides_parse_to_the_declared_type) {
  Declared d;
  d.s.apply_override("train.lr=1e-3");
  d.s.apply_override("seed=-7");
  d.s.apply_override("verbose=yes");
  d.s.apply_override("train.milestones=[5, 6, 7]");
  d.s.apply_override("model.dims=2,3.5");
  d.s.apply_override("model.schemes=[rope, none]");
  d.s.apply_override("name='a b'");
  BOOST_TEST(d.e.lr == 1e-3);
  BOOST_TEST(d.e.seed == -7);
  BOOST_TEST(d.e.verbose);
  BOOST_TEST(d.e.milestones == std::vector<int64_t>({5, 6, 7}));
  BOOST_TEST(d.e.dims == std::vector<double>({2.0, 3.5}));
  BOOST_TEST(d.e.schemes == std::vector<std::string>({"rope", "none"}));
  BOOST_TEST(d.e.name == "a b");
  d.s.apply_override("train.milestones=[]");
  BOOST_TEST(d.e.milestones.empty());
  // YAML lists in a file.
  d.s.load_yaml_text("train:\n  milestones: [1, 2]\n", "preset");
  BOOST_TEST(d.e.milestones == std::vector<int64_t>({1, 2}));
}

BOOST_AUTO_TEST_CASE(bad_values_name_the_key_the_value_and_what_was_expected) {
  Declared d;
  check_error([&] { d.s.apply_override("seed=3.5"); }, {"seed", "'3.5'", "int", "-Dseed=3.5"});
  check_error([&] { d.s.apply_override("verbose=y"); }, {"verbose", "'y'", "bool"});
  check_error([&] { d.s.apply_override("train.lr=0"); }, {"train.lr", "out of range", "> 0"});
  check_error([&] { d.s.apply_override("train.warmup=1.5"); }, {"train.warmup", ">= 0 and <= 1"});
  check_error([&] { d.s.apply_override("model.heads=0"); }, {"model.heads", ">= 1"});
  check_error([&] { d.s.apply_override("model.heads=3000000000"); }, {"model.heads", "int"});
  check_error([&] { d.s.apply_override("train.optimizer=adamm"); },
              {"train.optimizer", "'adamm'", "did you mean 'adam'", "one of: adam, adamw, sgd"});
  check_error([&] { d.s.apply_override("model.schemes=[rope, alibi]"); }, {"model.schemes", "'alibi'"});
  check_error([&] { d.s.apply_override("train.milestones=[1, x]"); }, {"train.milestones", "'x'", "int"});
  check_error([&] { d.s.load_yaml_text("seed: [1, 2]\n", "preset.yaml"); }, {"preset.yaml", "seed", "got a list"});
  check_error([&] { d.s.load_yaml_text("train:\n  lr:\n", "preset.yaml"); }, {"preset.yaml", "line 2", "train.lr", "no value"});
  check_error([&] { d.s.apply_override("seed"); }, {"key=value"});
  // A failed assignment leaves the value as it was.
  BOOST_TEST(d.e.seed == 0);
  BOOST_TEST(d.e.lr == 0.01);
  BOOST_TEST(d.e.optimizer == "adam");
}

// A float setting takes finite numbers unless it opts in to infinity; NaN is never a value. The
// bounds alone let both through: inf passes "> 0", and a setting without bounds took nan.
BOOST_AUTO_TEST_CASE(float_settings_refuse_nan_and_infinity) {
  Declared d;
  check_error([&] { d.s.apply_override("train.lr=nan"); }, {"-Dtrain.lr=nan", "train.lr", "nan is not a number"});
  check_error([&] { d.s.apply_override("train.lr=inf"); }, {"train.lr", "inf is not a finite number", "> 0"});
  check_error([&] { d.s.apply_override("train.warmup=-Infinity"); }, {"train.warmup", "-inf is not a finite number"});
  check_error([&] { d.s.apply_override("model.dims=[1, nan]"); }, {"model.dims", "nan is not a number"});
  check_error([&] { d.s.apply_override("model.dims=-inf"); }, {"model.dims", "-inf is not a finite number"});
  check_error([&] { d.s.load_yaml_text("model:\n  dims: [.inf]\n", "p.yaml"); }, {"p.yaml", "line 2", "model.dims", "finite"});
  check_error([&] { d.s.load_yaml_text("train:\n  lr: .NaN\n", "p.yaml"); }, {"p.yaml", "train.lr", "not a number"});
  BOOST_TEST(d.e.lr == 0.01);
  BOOST_TEST(d.e.dims == std::vector<double>{1.5});
}

// Where infinity means something ("no limit"), the app says so at the declaration.
BOOST_AUTO_TEST_CASE(infinity_is_a_value_where_the_setting_allows_it) {
  double limit = 0.0;
  Settings s;
  s.add("limit", limit, "minutes").at_least(0).allow_infinite();
  s.apply_override("limit=inf");
  BOOST_TEST(std::isinf(limit));
  check_error([&] { s.apply_override("limit=nan"); }, {"limit", "nan is not a number"});
  check_error([&] { s.apply_override("limit=-inf"); }, {"limit", "out of range", ">= 0"});
  BOOST_TEST(s.find("limit")->constraint_text() == ">= 0, inf allowed");
  int64_t count = 0;
  check_error([&] { s.add("count", count, "").allow_infinite(); }, {"count", "only for float"});
}

// YAML keys are unique within a map (yaml-cpp keeps both; the last one used to win silently), and a
// setting is given once per file, however it is spelled.
// An old name still sets the new setting (a run's config.yaml written before the rename loads),
// translating the values it lists and refusing the others with both names; --help and to_yaml
// know only the new name.
BOOST_AUTO_TEST_CASE(renamed_settings_load_under_their_old_names) {
  Declared d;
  d.s.rename("train.algorithm", "train.optimizer", {{"adaptive", "adam"}, {"plain", "sgd"}});
  d.s.rename("layers.heads", "model.heads");
  d.s.apply_override("train.algorithm=plain");
  BOOST_TEST(d.e.optimizer == "sgd");
  d.s.load_yaml_text("train:\n  algorithm: adaptive\nlayers:\n  heads: 8\n", "old config.yaml");
  BOOST_TEST(d.e.optimizer == "adam");
  BOOST_TEST(d.e.heads == 8);
  check_error([&] { d.s.apply_override("train.algorithm=momentum"); },
              {"'train.algorithm' is the old name of 'train.optimizer'", "'momentum'"});
  check_error([&] { d.s.apply_override("layers.heads=0"); }, {"model.heads"});  // the new key's constraint
  BOOST_TEST(d.s.to_yaml().find("algorithm") == std::string::npos);
  BOOST_TEST(d.s.describe().find("layers.heads") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(duplicate_keys_in_a_file_are_refused) {
  Declared d;
  check_error([&] { d.s.load_yaml_text("seed: 1\ntrain:\n  lr: 0.1\nseed: 2\n", "p.yaml"); },
              {"p.yaml (line 4)", "'seed' is given twice", "first on line 1"});
  check_error([&] { d.s.load_yaml_text("train:\n  lr: 0.1\n  warmup: 0\n  lr: 0.2\n", "p.yaml"); },
              {"p.yaml (line 4)", "'train.lr' is given twice", "first on line 2"});
  check_error([&] { d.s.load_yaml_text("train:\n  lr: 0.1\nmodel: {heads: 2}\ntrain:\n  warmup: 0\n", "p.yaml"); },
              {"p.yaml (line 4)", "'train' is given twice", "first on line 1"});
  check_error([&] { d.s.load_yaml_text("train.lr: 0.1\ntrain:\n  lr: 0.2\n", "p.yaml"); },
              {"p.yaml (line 3)", "'train.lr' is given twice", "first on line 1"});
  // Across files and overrides, later still wins: that is how presets stack.
  d.s.load_yaml_text("train:\n  lr: 0.1\n", "a.yaml");
  d.s.load_yaml_text("train:\n  lr: 0.2\n", "b.yaml");
  BOOST_TEST(d.e.lr == 0.2);
}

BOOST_AUTO_TEST_CASE(unknown_keys_name_a_close_match) {
  Declared d;
  check_error([&] { d.s.apply_override("train.lrr=1"); }, {"unknown setting 'train.lrr'", "did you mean 'train.lr'"});
  check_error([&] { d.s.load_yaml_text("train:\n  optimiser: sgd\n", "p.yaml"); },
              {"p.yaml", "train.optimiser", "did you mean 'train.optimizer'", "settings under 'train'"});
  check_error([&] { d.s.load_yaml_text("completely_else: 1\n", "p.yaml"); }, {"completely_else", "--help"});
  // Two edits away still names the key; the closest candidate wins over a farther one.
  check_error([&] { d.s.apply_override("modl.head=2"); }, {"did you mean 'model.heads'"});
  check_error([&] { d.s.apply_override("train.optimizr=sgd"); }, {"did you mean 'train.optimizer'"});
  // A very long key is far from every setting (the distance stops early): no suggestion.
  const std::string long_key(5000, 'q');
  check_error([&] { d.s.apply_override(long_key + "=1"); }, {"unknown setting", "--help"});
  check_error([&] { d.s.load_yaml_text("train: [\n", "broken.yaml"); }, {"broken.yaml", "not valid YAML", "line"});
  check_error([&] { d.s.load_yaml_file("/nonexistent/x.yaml"); }, {"/nonexistent/x.yaml"});
}

BOOST_AUTO_TEST_CASE(resolved_yaml_loads_back_to_the_same_values) {
  Declared a;
  a.s.apply_override("train.lr=0.1");  // not exact in binary: must still round-trip bit for bit
  a.s.apply_override("train.warmup=0.3333333333333333");
  a.s.apply_override("name=0.5");       // a string that YAML would read as a number
  a.s.apply_override("model.dims=[1e-300, 2.5]");
  a.s.apply_override("verbose=on");
  const std::string yaml = a.s.to_yaml();
  BOOST_TEST(yaml.find("# learning rate") != std::string::npos, yaml);
  Declared b;
  b.s.load_yaml_text(yaml, "round trip");
  BOOST_TEST(b.e.lr == a.e.lr);
  BOOST_TEST(b.e.warmup == a.e.warmup);
  BOOST_TEST(b.e.name == "0.5");
  BOOST_TEST(b.e.dims == a.e.dims);
  BOOST_TEST(b.e.verbose);
  BOOST_TEST(b.e.milestones == a.e.milestones);
  BOOST_TEST(b.e.schemes == a.e.schemes);
  BOOST_TEST(b.s.to_yaml() == yaml);
}

BOOST_AUTO_TEST_CASE(describe_lists_every_setting_with_type_default_and_help) {
  Declared d;
  const std::string text = d.s.describe();
  for (const char* part : {"train.lr", "float", "0.01", "learning rate", "(> 0)", "model.heads", "int",
                           "one of: adam, adamw, sgd", "list of int", "[100, 200]"})
    BOOST_TEST(text.find(part) != std::string::npos, part);
}

BOOST_AUTO_TEST_CASE(declaration_mistakes_are_caught) {
  ExampleFields e;
  Settings s;
  s.add("train.lr", e.lr, "");
  check_error([&] { s.add("train.lr", e.warmup, ""); }, {"declared twice"});
  check_error([&] { s.add("train", e.seed, ""); }, {"section"});
  check_error([&] { s.add("model.heads", e.heads, "").choices({"a"}); }, {"only for string"});
  check_error([&] { s.add("opt", e.optimizer, "").choices({"sgd"}); }, {"default adam"});
}

BOOST_AUTO_TEST_SUITE_END()

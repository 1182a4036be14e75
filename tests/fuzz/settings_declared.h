// The settings the two settings harnesses fill (fuzz_settings_yaml.cpp, fuzz_settings_override.cpp):
// one field of every type Settings supports, in nested sections, with choices and every kind of
// range, plus the round-trip check both harnesses apply after input was accepted:
//   to_yaml() loaded into a fresh declaration gives every setting the same value
// (settings.h promises that a run's config.yaml repeats the run exactly).
//
// Deliberately not here: any input handling (each harness feeds the parser its own way).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/settings.h"
#include "tests/fuzz/fuzz_support.h"

namespace posgrad::fuzz {

struct DeclaredFields {
  bool flag = false;
  int64_t seed = 0;
  int heads = 4;
  double lr = 0.01;
  double warmup = 0.5;
  std::string optimizer = "adam";
  std::string name = "run";
  std::vector<int64_t> milestones{100, 200};
  std::vector<double> dims{1.5};
  std::vector<std::string> schemes{"siren"};
  std::vector<std::string> tags{};
};

struct DeclaredSettings {
  DeclaredFields f;
  apps::Settings s;
  DeclaredSettings() {
    s.add("verbose", f.flag, "print more");
    s.add("seed", f.seed, "random seed");
    s.add("model.heads", f.heads, "attention heads").at_least(1).at_most(64);
    s.add("train.lr", f.lr, "learning rate").above(0);
    s.add("train.warmup", f.warmup, "warm-up share").at_least(0).at_most(1);
    s.add("train.optimizer", f.optimizer, "optimizer").choices({"adam", "adamw", "sgd"});
    s.add("name", f.name, "run name");
    s.add("train.schedule.milestones", f.milestones, "LR drops").at_least(0);
    s.add("model.dims", f.dims, "sizes");
    s.add("model.schemes", f.schemes, "schemes").choices({"siren", "rope", "none"});
    s.add("tags", f.tags, "free-form labels");
  }
};

// Writes `loaded` as YAML, reads it back into a fresh declaration and aborts (a finding) unless
// every setting reads back to the same text.
inline void check_round_trip(const apps::Settings& loaded) {
  const std::string yaml = loaded.to_yaml();
  (void)loaded.describe();
  (void)loaded.changed_keys();
  DeclaredSettings again;
  try {
    again.s.load_yaml_text(yaml, "round trip");
  } catch (const posgrad::Error& e) {
    fuzz_finding("to_yaml() output does not load back: " + std::string(e.what()) + "\n--- yaml ---\n" + yaml);
  }
  for (const apps::Setting& setting : loaded.all()) {
    const apps::Setting* back = again.s.find(setting.key());
    if (back == nullptr || back->value_text() != setting.value_text())
      fuzz_finding("setting '" + setting.key() + "' does not round-trip: '" + setting.value_text() + "' became '" +
                   (back ? back->value_text() : std::string("<missing>")) + "'\n--- yaml ---\n" + yaml);
  }
}

}  // namespace posgrad::fuzz

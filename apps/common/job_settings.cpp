// JobSettings: see job_settings.h.
#include "apps/common/job_settings.h"

#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

namespace posgrad::apps {

namespace {

bool takes_key(const std::vector<std::string>& takes, const std::string& key) {
  for (const std::string& t : takes)
    if (t == key || (!t.empty() && t.back() == '.' && key.rfind(t, 0) == 0)) return true;
  return false;
}

// The given settings' values as a YAML map of their dotted keys, every scalar quoted (a setting
// reads text by its declared type, so "0.07" is the float 0.07).
std::string values_as_yaml(const std::vector<const Setting*>& settings,
                           const std::map<std::string, std::vector<std::string>>& values) {
  YAML::Node root(YAML::NodeType::Map);
  for (const Setting* s : settings) {
    const std::vector<std::string>& items = values.at(s->key());
    if (s->is_list()) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const std::string& item : items) list.push_back(item);
      root[s->key()] = list;
    } else {
      root[s->key()] = items.front();
    }
  }
  YAML::Emitter out;
  out << YAML::DoubleQuoted << root;
  return out.c_str();
}

}  // namespace

std::vector<std::string> apply_job_settings(Settings& settings, const JobSettings& job,
                                            const std::vector<std::string>& takes, const std::string& name) {
  std::map<std::string, std::vector<std::string>> before;
  for (const Setting& s : settings.all()) before[s.key()] = s.value_items();
  for (const auto& preset : job.presets) settings.load_yaml_file(preset);
  for (const std::string& o : job.overrides) settings.apply_override(o);

  std::vector<const Setting*> ignored;
  for (const Setting& s : settings.all())
    if (s.value_items() != before.at(s.key()) && !takes_key(takes, s.key())) ignored.push_back(&s);
  if (ignored.empty()) return {};
  settings.load_yaml_text(values_as_yaml(ignored, before), "the run's config.yaml");
  std::vector<std::string> keys;
  for (const Setting* s : ignored) keys.push_back(s->key());
  std::string taken;
  for (const std::string& t : takes) taken += (taken.empty() ? "" : ", ") + (t.back() == '.' ? t + "*" : t);
  std::fprintf(stderr, "%s: ignoring %s: the run's config.yaml decides that (this job takes only %s)\n", name.c_str(),
               fmt::format("{}", fmt::join(keys, ", ")).c_str(), taken.c_str());
  return keys;
}

}  // namespace posgrad::apps

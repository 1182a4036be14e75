// Sweep files and run plans (see sweep.h).
#include "apps/common/sweep.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "apps/common/cli.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace {

std::string scalar_text(const YAML::Node& node, const std::string& where) {
  if (node.IsScalar()) return node.as<std::string>();
  if (node.IsSequence()) {
    std::string out = "[";
    for (size_t i = 0; i < node.size(); ++i) out += (i ? ", " : "") + scalar_text(node[i], where);
    return out + "]";
  }
  fail("{}: expected a value or a list of values", where);
}

std::vector<std::string> text_list(const YAML::Node& node, const std::string& where) {
  std::vector<std::string> out;
  if (!node) return out;
  if (node.IsScalar()) return {node.as<std::string>()};
  if (!node.IsSequence()) fail("{}: expected a list", where);
  for (const auto& item : node) out.push_back(scalar_text(item, where));
  return out;
}

KeyValues key_values(const YAML::Node& node, const std::string& where) {
  KeyValues out;
  if (!node) return out;
  if (!node.IsMap()) fail("{}: expected a map of setting: value", where);
  for (const auto& kv : node) out.emplace_back(kv.first.as<std::string>(), scalar_text(kv.second, where + "." + kv.first.as<std::string>()));
  return out;
}

std::optional<double> number(const YAML::Node& node, const std::string& key, const std::string& where) {
  if (!node || !node[key] || node[key].IsNull()) return std::nullopt;
  try {
    return node[key].as<double>();
  } catch (const YAML::Exception&) {
    fail("{}.{}: '{}' is not a number", where, key, scalar_text(node[key], where));
  }
}

std::vector<std::filesystem::path> presets(const YAML::Node& node, const std::string& where) {
  std::vector<std::filesystem::path> out;
  for (const std::string& p : text_list(node, where)) {
    try {
      out.push_back(std::filesystem::absolute(resolve_preset(p)));
    } catch (const Error& e) {
      fail("{}: {}", where, e.what());
    }
  }
  return out;
}

}  // namespace

SweepSpec load_sweep(const std::filesystem::path& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    fail("sweep file '{}': cannot open", file.string());
  } catch (const YAML::Exception& e) {
    fail("sweep file '{}': {}", file.string(), e.what());
  }
  const std::string f = fmt::format("sweep file '{}'", file.string());
  if (!root.IsMap()) fail("{}: expected a map (app, seeds, arms, ...)", f);
  static const std::vector<std::string> known = {"app", "title", "base", "set", "out", "runs", "metric", "higher_is_better",
                                                 "curve", "over", "seed_key", "seeds", "arms", "grid", "comparisons",
                                                 "reference_source", "ranks", "launcher"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail("{}: unknown key '{}' (known: {})", f, key, fmt::join(known, ", "));
  }
  SweepSpec s;
  s.file = file;
  s.title = root["title"] ? root["title"].as<std::string>() : file.stem().string();
  if (!root["app"]) fail("{}: 'app' (the executable to run) is missing", f);
  s.app = root["app"].as<std::string>();
  s.base = presets(root["base"], f + ": base");
  s.set = key_values(root["set"], f + ": set");
  s.out = root["out"] ? std::filesystem::path(root["out"].as<std::string>()) : std::filesystem::path("runs/sweeps") / file.stem();
  s.runs = root["runs"] ? std::filesystem::path(root["runs"].as<std::string>()) : s.out;
  if (root["metric"]) s.metric = root["metric"].as<std::string>();
  if (root["higher_is_better"]) s.higher_is_better = root["higher_is_better"].as<bool>();
  if (root["curve"]) {
    for (const auto& entry : root["curve"]) {
      const std::string key = entry.first.as<std::string>();
      if (key != "x" && key != "y" && key != "log_y")
        fail("{}: curve: unknown key '{}' (x, y, log_y)", f, key);
    }
    s.curve_x = root["curve"]["x"] ? root["curve"]["x"].as<std::string>() : "epoch";
    s.curve_y = root["curve"]["y"] ? root["curve"]["y"].as<std::string>() : "";
    s.curve_log_y = root["curve"]["log_y"] && root["curve"]["log_y"].as<bool>();
  }
  if (root["over"]) {
    const YAML::Node over = root["over"];
    if (!over.IsMap()) fail("{}: 'over' must be a map (setting, y, log_x)", f);
    for (const auto& entry : over) {
      const std::string key = entry.first.as<std::string>();
      if (key != "setting" && key != "y" && key != "log_x") fail("{}: over: unknown key '{}' (setting, y, log_x)", f, key);
    }
    if (!over["setting"] || over["setting"].as<std::string>().empty())
      fail("{}: over: 'setting' (a key of 'grid', the x axis) is missing", f);
    s.over_setting = over["setting"].as<std::string>();
    s.over_y = text_list(over["y"], f + ": over.y");
    if (s.over_y.empty()) fail("{}: over: 'y' must list summary.json numbers to draw", f);
    s.over_log_x = over["log_x"] && over["log_x"].as<bool>();
  }
  if (root["seed_key"]) s.seed_key = root["seed_key"].as<std::string>();
  if (root["reference_source"]) s.reference_source = root["reference_source"].as<std::string>();
  if (root["ranks"] && root["launcher"]) fail("{}: give 'ranks' or 'launcher', not both", f);
  if (root["ranks"]) {
    int64_t ranks = 0;
    try {
      ranks = root["ranks"].as<int64_t>();
    } catch (const YAML::Exception&) {
      fail("{}: 'ranks' must be a whole number of processes, got '{}'", f, root["ranks"].as<std::string>());
    }
    s.launcher = mpirun_launcher(ranks, f + ": ranks");
  }
  if (root["launcher"]) {
    if (!root["launcher"].IsSequence() || root["launcher"].size() == 0)
      fail("{}: 'launcher' must be a non-empty list (the command and its arguments, e.g. [mpirun, -np, 2])", f);
    for (const auto& word : root["launcher"]) s.launcher.push_back(word.as<std::string>());
    if (s.launcher[0].empty()) fail("{}: 'launcher' starts with an empty command", f);
  }
  if (!root["seeds"] || !root["seeds"].IsSequence() || root["seeds"].size() == 0) fail("{}: 'seeds' must be a non-empty list", f);
  for (const auto& seed : root["seeds"]) {
    try {
      s.seeds.push_back(seed.as<int64_t>());
    } catch (const YAML::Exception&) {
      fail("{}: seed '{}' is not an integer", f, seed.as<std::string>());
    }
    // A repeated seed is the same run: counted twice it would fake a sample of two.
    if (std::count(s.seeds.begin(), s.seeds.end(), s.seeds.back()) > 1)
      fail("{}: seed {} is listed twice in 'seeds' (each seed is one run)", f, s.seeds.back());
  }
  std::vector<SweepArm> arms;
  if (root["arms"]) {
    if (!root["arms"].IsSequence()) fail("{}: 'arms' must be a list", f);
    for (size_t i = 0; i < root["arms"].size(); ++i) {
      const YAML::Node a = root["arms"][i];
      const std::string where = fmt::format("{}: arms[{}]", f, i);
      if (!a.IsMap() || !a["name"]) fail("{}: every arm needs a 'name'", where);
      SweepArm arm;
      arm.name = a["name"].as<std::string>();
      if (arm.name.empty() || arm.name.find_first_of("/\\ ") != std::string::npos)
        fail("{}: arm name '{}' must be non-empty, without spaces or slashes (it names a folder)", where, arm.name);
      arm.configs = presets(a["config"], where + ".config");
      arm.set = key_values(a["set"], where + ".set");
      arm.family = arm.name;
      if (a["reference"]) {
        ArmStats r;
        r.max = number(a["reference"], "max", where + ".reference").value_or(NAN);
        r.mean = number(a["reference"], "mean", where + ".reference").value_or(NAN);
        r.sd = number(a["reference"], "sd", where + ".reference").value_or(NAN);
        r.n = static_cast<int>(number(a["reference"], "n", where + ".reference").value_or(0));
        arm.reference = r;
      }
      for (const auto& other : arms)
        if (other.name == arm.name) fail("{}: two arms are named '{}'", where, arm.name);
      arms.push_back(std::move(arm));
    }
  }
  if (arms.empty()) arms.push_back(SweepArm{"base", {}, {}, std::nullopt, "base"});
  if (root["grid"]) {
    if (!root["grid"].IsMap()) fail("{}: 'grid' must be a map of setting: [values]", f);
    for (const auto& kv : root["grid"]) {
      const std::string key = kv.first.as<std::string>();
      const std::vector<std::string> values = text_list(kv.second, f + ": grid." + key);
      if (values.empty()) fail("{}: grid.{} has no values", f, key);
      for (size_t i = 1; i < values.size(); ++i)
        if (std::find(values.begin(), values.begin() + i, values[i]) != values.begin() + i)
          fail("{}: grid.{} lists '{}' twice (it would be one arm run twice)", f, key, values[i]);
      std::vector<SweepArm> expanded;
      for (const auto& arm : arms)
        for (const auto& v : values) {
          SweepArm a = arm;
          a.name = (arm.name == "base" ? "" : arm.name + ",") + key + "=" + v;
          // The family (a line of the over figure) names every value but the over setting's.
          if (key != s.over_setting) a.family = (arm.family == "base" ? "" : arm.family + ",") + key + "=" + v;
          a.set.emplace_back(key, v);
          a.reference.reset();
          expanded.push_back(std::move(a));
        }
      arms = std::move(expanded);
    }
  }
  if (!s.over_setting.empty()) {
    if (!root["grid"] || !root["grid"][s.over_setting])
      fail("{}: over.setting '{}' is not a key of 'grid' (its values are the x axis)", f, s.over_setting);
    for (SweepArm& arm : arms) {
      std::string value;  // the grid put the setting last into `set`
      for (const auto& [k, v] : arm.set)
        if (k == s.over_setting) value = v;
      try {
        size_t used = 0;
        arm.over_x = std::stod(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        fail("{}: grid.{} value '{}' is not a number (over.setting draws it on the x axis)", f, s.over_setting, value);
      }
      if (s.over_log_x && !(arm.over_x > 0))
        fail("{}: grid.{} value '{}' cannot go on a log x axis (over.log_x needs values > 0)", f, s.over_setting, value);
    }
  }
  s.arms = std::move(arms);
  if (root["comparisons"]) {
    for (size_t i = 0; i < root["comparisons"].size(); ++i) {
      const YAML::Node c = root["comparisons"][i];
      const std::string where = fmt::format("{}: comparisons[{}]", f, i);
      if (!c["a"] || !c["b"]) fail("{}: a comparison needs arms 'a' and 'b'", where);
      SweepComparison cmp;
      cmp.a = c["a"].as<std::string>();
      cmp.b = c["b"].as<std::string>();
      cmp.name = c["name"] ? c["name"].as<std::string>() : cmp.b + " vs " + cmp.a;
      for (const std::string& arm : {cmp.a, cmp.b})
        if (std::none_of(s.arms.begin(), s.arms.end(), [&](const SweepArm& x) { return x.name == arm; }))
          fail("{}: no arm named '{}'", where, arm);
      cmp.reference_effect = number(c, "reference_effect", where);
      cmp.reference_p = number(c, "reference_p", where);
      s.comparisons.push_back(std::move(cmp));
    }
  }
  return s;
}

std::vector<SweepRun> plan_sweep(const SweepSpec& spec) {
  std::vector<SweepRun> runs;
  // Seed-major: every arm's first seed before any second seed, so a sweep stopped early has a
  // comparable table.
  for (int64_t seed : spec.seeds)
    for (size_t a = 0; a < spec.arms.size(); ++a)
      runs.push_back({a, seed, spec.runs / spec.arms[a].name / fmt::format("seed-{}", seed)});
  return runs;
}

void create_sweep_folders(const SweepSpec& spec) {
  for (const std::filesystem::path& folder : {spec.out, spec.runs}) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) fail("sweep '{}': cannot create the folder '{}': {}", spec.file.string(), folder.string(), ec.message());
  }
}

std::vector<std::string> run_command(const SweepSpec& spec, const SweepRun& run, const std::filesystem::path& app,
                                     const std::vector<std::string>& extra, bool resume) {
  std::vector<std::string> argv = spec.launcher;
  argv.insert(argv.end(), {app.string(), "train"});
  if (resume) {
    argv.insert(argv.end(), {"--resume", run.dir.string()});
    return argv;
  }
  const SweepArm& arm = spec.arms[run.arm];
  for (const auto& p : spec.base) argv.insert(argv.end(), {"--config", p.string()});
  for (const auto& p : arm.configs) argv.insert(argv.end(), {"--config", p.string()});
  for (const auto& [k, v] : spec.set) argv.push_back("-D" + k + "=" + v);
  for (const auto& [k, v] : arm.set) argv.push_back("-D" + k + "=" + v);
  for (const auto& e : extra) argv.push_back("-D" + e);
  argv.push_back(fmt::format("-D{}={}", spec.seed_key, run.seed));
  argv.insert(argv.end(), {"--out", run.dir.string(), "--overwrite"});
  return argv;
}

std::vector<std::string> mpirun_launcher(int64_t ranks, const std::string& where) {
  if (ranks < 1) fail("{}: the number of ranks must be at least 1, got {}", where, ranks);
  if (ranks == 1) return {};
  return {"mpirun", "-np", std::to_string(ranks)};
}

std::filesystem::path find_app(const SweepSpec& spec, const std::filesystem::path& self) {
  std::filesystem::path app = spec.app.find('/') != std::string::npos ? std::filesystem::path(spec.app)
                                                                       : self.parent_path() / spec.app;
  if (!std::filesystem::exists(app))
    fail("sweep '{}': app '{}' not found (looked for '{}'; build it, or give its path in 'app:')", spec.file.string(),
         spec.app, app.string());
  return app;
}

}  // namespace posgrad::apps

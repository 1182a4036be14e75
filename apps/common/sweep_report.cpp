// The results of a sweep (see sweep_report.h).
#include "apps/common/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/common/plot.h"
#include "nn/atomic_file.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace {

std::string num(double v, int digits = 4) { return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "-"; }
std::string pval(double p) { return !std::isfinite(p) ? "-" : p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p); }

std::vector<double> values_of(const std::vector<RunResult>& results, size_t arm) {
  std::vector<double> out;
  for (const auto& r : results)
    if (r.run.arm == arm && r.value) out.push_back(*r.value);
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void draw_curves(const SweepSpec& spec, const std::vector<RunResult>& results) {
  if (spec.curve_y.empty()) return;
  std::vector<Series> series;
  for (size_t a = 0; a < spec.arms.size(); ++a) {
    std::vector<double> sum_x, sum_y;
    std::vector<int> count;
    for (const auto& r : results) {
      if (r.run.arm != a || r.curve_y.empty()) continue;
      Series s{"", r.curve_x, r.curve_y, palette(static_cast<int>(a)), 1.0};
      series.push_back(s);
      for (size_t i = 0; i < r.curve_y.size(); ++i) {
        if (sum_y.size() <= i) {
          sum_x.push_back(r.curve_x[i]);
          sum_y.push_back(0);
          count.push_back(0);
        }
        sum_y[i] += r.curve_y[i];
        ++count[i];
      }
    }
    if (sum_y.empty()) continue;
    for (size_t i = 0; i < sum_y.size(); ++i) sum_y[i] /= count[i];
    series.push_back({spec.arms[a].name, sum_x, sum_y, palette(static_cast<int>(a)), 3.0, 2.5});
  }
  if (series.empty()) return;
  Figure fig(1, 1, 900, 560, fmt::format("{}: {} per {} (thin: each seed; thick: mean over seeds)", spec.title, spec.curve_y, spec.curve_x));
  LinePlotOptions o;
  o.x_label = spec.curve_x;
  o.y_label = spec.curve_y;
  o.log_y = spec.curve_log_y;
  draw_line_plot(fig.canvas(), fig.panel(0, 0), series, o);
  fig.save_png(spec.out / "figures" / "curves.png");
}

// The over.y numbers per arm family and over.setting value: {family: {x: {key: values}}}, the
// families in the arms' order.
struct OverValues {
  std::vector<std::string> families;
  std::map<std::string, std::map<double, std::map<std::string, std::vector<double>>>> values;
};

OverValues over_values(const SweepSpec& spec, const std::vector<RunResult>& results) {
  OverValues out;
  for (const SweepArm& arm : spec.arms) {
    if (std::find(out.families.begin(), out.families.end(), arm.family) == out.families.end())
      out.families.push_back(arm.family);
    auto& at_x = out.values[arm.family][arm.over_x];
    for (const std::string& key : spec.over_y) at_x[key];  // a value with no finished run yet: an empty cell
  }
  for (const RunResult& r : results) {
    const SweepArm& arm = spec.arms[r.run.arm];
    for (const auto& [key, v] : r.numbers) out.values[arm.family][arm.over_x][key].push_back(v);
  }
  return out;
}

std::string over_cell(const std::vector<double>& values) {
  if (values.empty()) return "-";
  const ArmStats s = arm_stats(values);
  if (s.n == 1) return fmt::format("{:.5g} (1)", s.mean);
  return fmt::format("{:.5g} ± {:.2g} ({})", s.mean, s.sd, s.n);
}

// results.md's tables and over.csv: one table per over.y number, a row per family, a column per
// setting value.
void write_over_tables(const SweepSpec& spec, const OverValues& over, std::string& md) {
  std::vector<double> xs;
  for (const auto& [family, at_x] : over.values)
    for (const auto& entry : at_x)
      if (std::find(xs.begin(), xs.end(), entry.first) == xs.end()) xs.push_back(entry.first);
  std::sort(xs.begin(), xs.end());
  std::string csv = "family," + csv_field(spec.over_setting) + ",number,n,mean,sd,values\n";
  for (const std::string& key : spec.over_y) {
    md += fmt::format("\n`{}` against `{}` (mean ± sd over seeds, and n):\n\n| arm |", key, spec.over_setting);
    for (double x : xs) md += fmt::format(" {} = {:g} |", spec.over_setting, x);
    md += "\n|---|";
    for (size_t i = 0; i < xs.size(); ++i) md += "---|";
    md += "\n";
    for (const std::string& family : over.families) {
      md += "| " + family + " |";
      const auto& at_x = over.values.at(family);
      for (double x : xs) {
        const auto it = at_x.find(x);
        const std::vector<double> values = it == at_x.end() ? std::vector<double>{} : it->second.at(key);
        md += " " + over_cell(values) + " |";
        if (it == at_x.end()) continue;
        const ArmStats s = arm_stats(values);
        std::vector<std::string> raw;
        for (double v : values) raw.push_back(fmt::format("{}", v));
        csv += fmt::format("{},{},{},{},{},{},{}\n", csv_field(family), x, csv_field(key), s.n, s.n ? fmt::format("{}", s.mean) : "",
                           s.n > 1 ? fmt::format("{}", s.sd) : "", csv_field(fmt::format("{}", fmt::join(raw, ";"))));
      }
      md += "\n";
    }
  }
  write_file_atomically(spec.out / "over.csv", csv);
}

// figures/over.png: a panel per over.y number against the setting; a line through each family's
// means, a dot per seed.
void draw_over(const SweepSpec& spec, const OverValues& over) {
  const int panels = static_cast<int>(spec.over_y.size());
  Figure fig(1, panels, 460, 400, fmt::format("{} against {} (lines: mean over seeds; dots: each seed)", spec.title, spec.over_setting));
  for (int p = 0; p < panels; ++p) {
    const std::string& key = spec.over_y[static_cast<size_t>(p)];
    std::vector<Series> series;
    for (size_t f = 0; f < over.families.size(); ++f) {
      const std::string& family = over.families[f];
      Series mean{family, {}, {}, palette(static_cast<int>(f)), 2.5, 3.5};
      for (const auto& [x, numbers] : over.values.at(family)) {
        const std::vector<double>& values = numbers.at(key);
        if (values.empty()) continue;
        mean.xs.push_back(x);
        mean.ys.push_back(arm_stats(values).mean);
        for (double v : values) series.push_back({"", {x}, {v}, palette(static_cast<int>(f)), 1.0, 2.0});
      }
      series.push_back(std::move(mean));
    }
    LinePlotOptions o;
    o.title = key;
    o.x_label = spec.over_setting;
    o.y_label = key;
    o.log_x = spec.over_log_x;
    o.legend = p == 0;
    draw_line_plot(fig.canvas(), fig.panel(0, p), series, o);
  }
  fig.save_png(spec.out / "figures" / "over.png");
}

}  // namespace

std::vector<RunResult> collect_results(const SweepSpec& spec, const std::vector<SweepRun>& runs,
                                       const std::map<std::string, std::string>& failures) {
  std::vector<RunResult> out;
  for (const SweepRun& run : runs) {
    RunResult r{run, "", std::nullopt, {}, {}};
    if (run.finished()) {
      const auto summary = nlohmann::json::parse(read_file_bytes(run.dir / "summary.json"));
      if (!summary.contains(spec.metric) || !summary[spec.metric].is_number())
        fail("{}: no number '{}' in summary.json (the sweep's metric)", run.dir.string(), spec.metric);
      r.value = summary[spec.metric].get<double>();
      for (const std::string& key : spec.over_y) {
        if (!summary.contains(key) || !summary[key].is_number())
          fail("{}: no number '{}' in summary.json (the sweep's over.y)", run.dir.string(), key);
        r.numbers[key] = summary[key].get<double>();
      }
      r.status = "finished";
    } else if (failures.count(run.dir.string())) {
      r.status = "failed: " + failures.at(run.dir.string());
    } else {
      r.status = run.started() ? "interrupted" : "not started";
    }
    if (!spec.curve_y.empty() && std::filesystem::exists(run.dir / "metrics.jsonl")) {
      std::ifstream in(run.dir / "metrics.jsonl");
      for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains(spec.curve_y) || !j[spec.curve_y].is_number()) continue;
        r.curve_x.push_back(j.contains(spec.curve_x) && j[spec.curve_x].is_number() ? j[spec.curve_x].get<double>()
                                                                                   : static_cast<double>(r.curve_x.size()));
        r.curve_y.push_back(j[spec.curve_y].get<double>());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

void write_sweep_report(const SweepSpec& spec, const std::vector<RunResult>& results, const std::string& note) {
  std::filesystem::create_directories(spec.out);
  const bool any_reference = std::any_of(spec.arms.begin(), spec.arms.end(), [](const SweepArm& a) { return a.reference.has_value(); });
  std::string md = fmt::format("# Sweep {}: {}\n\n", spec.title, spec.metric);
  md += fmt::format("Sweep file `{}`; {} arms x {} seeds ({}); metric `{}` from each run's summary.json.\n",
                    spec.file.string(), spec.arms.size(), spec.seeds.size(), fmt::join(spec.seeds, ", "), spec.metric);
  if (!note.empty()) md += note + "\n";
  if (any_reference && !spec.reference_source.empty()) md += fmt::format("Reference numbers: {}.\n", spec.reference_source);
  md += "\n| arm | n | values (per seed) | max | mean | sd | mean ± 95% CI |";
  if (any_reference) md += " ref. max | ref. mean | ref. sd |";
  md += "\n|---|---|---|---|---|---|---|";
  if (any_reference) md += "---|---|---|";
  md += "\n";
  std::string csv = "arm,n,values,max,mean,sd,ci95_low,ci95_high,reference_max,reference_mean,reference_sd\n";
  std::vector<ArmStats> stats;
  for (size_t a = 0; a < spec.arms.size(); ++a) {
    const auto values = values_of(results, a);
    const ArmStats s = arm_stats(values);
    const double half = ci95_half_width(s);
    stats.push_back(s);
    std::vector<std::string> texts;
    for (const auto& r : results)
      if (r.run.arm == a) texts.push_back(r.value ? num(*r.value) : "(" + r.status.substr(0, r.status.find(':')) + ")");
    const auto& ref = spec.arms[a].reference;
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |", spec.arms[a].name, s.n, fmt::join(texts, ", "), num(s.max),
                      num(s.mean), num(s.sd), std::isfinite(half) ? num(s.mean) + " ± " + num(half) : "-");
    if (any_reference)
      md += ref ? fmt::format(" {} | {} | {} |", num(ref->max), num(ref->mean), num(ref->sd)) : " | | |";
    md += "\n";
    std::vector<std::string> raw;
    for (double v : values) raw.push_back(fmt::format("{}", v));
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(spec.arms[a].name), s.n, csv_field(fmt::format("{}", fmt::join(raw, ";"))),
                       s.n ? fmt::format("{}", s.max) : "", s.n ? fmt::format("{}", s.mean) : "",
                       s.n > 1 ? fmt::format("{}", s.sd) : "", std::isfinite(half) ? fmt::format("{}", s.mean - half) : "",
                       std::isfinite(half) ? fmt::format("{}", s.mean + half) : "", ref ? fmt::format("{}", ref->max) : "",
                       ref ? fmt::format("{}", ref->mean) : "", ref ? fmt::format("{}", ref->sd) : "");
  }
  if (!spec.comparisons.empty()) {
    md += "\nEffect = mean(B) - mean(A); p: two-sided Welch t-test over the seeds.\n\n";
    md += "| comparison | A | B | effect | t | df | p |";
    if (any_reference) md += " ref. effect | ref. p |";
    md += "\n|---|---|---|---|---|---|---|";
    if (any_reference) md += "---|---|";
    md += "\n";
    csv += "\ncomparison,a,b,effect,t,df,p,reference_effect,reference_p\n";
    for (const auto& c : spec.comparisons) {
      size_t ia = 0, ib = 0;
      for (size_t a = 0; a < spec.arms.size(); ++a) {
        if (spec.arms[a].name == c.a) ia = a;
        if (spec.arms[a].name == c.b) ib = a;
      }
      const auto w = welch_t_test(values_of(results, ia), values_of(results, ib));
      // An arm without a finished run has no mean, so the comparison has no effect yet ("-").
      const bool both_measured = stats[ia].n > 0 && stats[ib].n > 0;
      const double effect = stats[ib].mean - stats[ia].mean;
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |", c.name, c.a, c.b,
                        both_measured ? fmt::format("{:+.4f}", effect) : "-", w ? num(w->t, 3) : "-",
                        w ? num(w->df, 2) : "-", w ? pval(w->p) : "-");
      if (any_reference)
        md += fmt::format(" {} | {} |", c.reference_effect ? fmt::format("{:+.4f}", *c.reference_effect) : "",
                          c.reference_p ? pval(*c.reference_p) : "");
      md += "\n";
      csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_field(c.name), csv_field(c.a), csv_field(c.b),
                         both_measured ? fmt::format("{}", effect) : "",
                         w ? fmt::format("{}", w->t) : "", w ? fmt::format("{}", w->df) : "", w ? fmt::format("{}", w->p) : "",
                         c.reference_effect ? fmt::format("{}", *c.reference_effect) : "",
                         c.reference_p ? fmt::format("{}", *c.reference_p) : "");
    }
  }
  std::string runs = "arm,seed,status,value,run_dir\n";
  for (const auto& r : results)
    runs += fmt::format("{},{},{},{},{}\n", csv_field(spec.arms[r.run.arm].name), r.run.seed, csv_field(r.status),
                        r.value ? fmt::format("{}", *r.value) : "", csv_field(r.run.dir.string()));
  const std::optional<OverValues> over =
      spec.over_setting.empty() ? std::nullopt : std::optional<OverValues>(over_values(spec, results));
  if (over) write_over_tables(spec, *over, md);
  write_file_atomically(spec.out / "results.md", md);
  write_file_atomically(spec.out / "results.csv", csv);
  write_file_atomically(spec.out / "runs.csv", runs);
  draw_curves(spec, results);
  if (over) draw_over(spec, *over);
}

}  // namespace posgrad::apps

// TensorBoard event files (apps/common/tfrecord.h, tensorboard_events.h, RunDir): CRC-32C against
// the standard check value and the masked CRC against TensorBoard's own implementation; a TFRecord
// round trip and damaged records named; an event file's first record, scalars, image, text and
// session restart; the scalars of a nested metrics record; a run folder's events (config text,
// metrics, figures, the restart of a resumed run, old files gone with --overwrite); and that
// charlm, posattn (with CIFAR-10) and a posgrad-sweep's runs write events with the expected tags.
// count24's scalars are read back with TensorBoard's own reader by tests/apps/tensorboard_reader.py.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/canvas.h"
#include "apps/common/run_dir.h"
#include "apps/common/settings.h"
#include "apps/common/tensorboard_events.h"
#include "apps/common/tfrecord.h"
#include "datasets/data_dir.h"
#include "tests/apps/app_process.h"
#include "tests/apps/tensorboard_event_files.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
namespace tb = posgrad::tensorboard;
using namespace posgrad::apps;
using posgrad::test::check_error;
using posgrad::test::event_files;
using posgrad::test::event_tags;
using posgrad::test::read_events;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string png_of_size(int width, int height) { return Canvas(width, height).encode(ImageFormat::Png); }

bool has_all(const std::set<std::string>& tags, std::initializer_list<const char*> wanted, std::string& missing) {
  for (const char* w : wanted)
    if (!tags.count(w)) missing += std::string(missing.empty() ? "" : ", ") + w;
  return missing.empty();
}

#define CHECK_TAGS(tags, ...)                                              \
  do {                                                                     \
    std::string missing;                                                   \
    BOOST_TEST(has_all(tags, {__VA_ARGS__}, missing), "missing tags: " << missing); \
  } while (0)

}  // namespace

BOOST_AUTO_TEST_SUITE(tensorboard)

BOOST_AUTO_TEST_CASE(crc32c_matches_the_check_value_and_tensorboards_mask) {
  BOOST_TEST(crc32c("123456789") == 0xE3069283u);
  BOOST_TEST(crc32c("") == 0u);
  // The values TensorBoard's own masked_crc32c gives (tensorboard 2.19, Python).
  BOOST_TEST(masked_crc32c("123456789") == 0xC78AB0E5u);
  BOOST_TEST(masked_crc32c(std::string(8, '\0')) == 0x07980329u);
}

BOOST_AUTO_TEST_CASE(records_round_trip_and_damage_is_named) {
  TempDir tmp;
  const fs::path file = tmp / "records";
  std::string binary;
  for (int i = 0; i < 1000; ++i) binary += static_cast<char>(i * 7);
  const std::vector<std::string> records{"", "a", binary, std::string(3, '\0')};
  std::string all;
  for (const auto& r : records) all += tfrecord_frame(r);
  BOOST_TEST(all.size() == 16 * records.size() + 1 + 1000 + 3);
  BOOST_TEST(all.substr(0, 12) == std::string(8, '\0') + std::string("\x29\x03\x98\x07", 4));  // length 0, its masked CRC
  write_bytes(file, all);
  BOOST_TEST(read_tfrecords(file) == records);

  std::string damaged = all;
  damaged[16 + 12] = 'b';  // the data of the second record
  write_bytes(file, damaged);
  check_error([&] { read_tfrecords(file); }, {file.string(), "byte 16", "wrong data checksum"});
  damaged = all;
  damaged[16 + 3] = 1;  // the length of the second record
  write_bytes(file, damaged);
  check_error([&] { read_tfrecords(file); }, {"byte 16", "wrong length checksum"});
  write_bytes(file, all.substr(0, all.size() - 2));
  check_error([&] { read_tfrecords(file); }, {"cut short"});
}

BOOST_AUTO_TEST_CASE(event_file_starts_with_its_version_then_holds_what_was_written) {
  TempDir tmp;
  fs::path path;
  {
    TensorboardEvents events(tmp.path());
    path = events.path();
    events.scalars(7, {{"loss", 0.25}, {"head_spans/1/0", 12.5}});
    events.image_png("figures/curves", 7, png_of_size(30, 20));
    events.text("config", 0, "    a: 1\n");
    events.session_start(3);
    check_error([&] { events.image_png("figures/bad", 7, "GIF89a not a png, long enough to have a header"); },
                {"figures/bad", "not a PNG"});
  }
  BOOST_TEST(path.filename().string().rfind("events.out.tfevents.", 0) == 0);
  BOOST_TEST(path.parent_path() == tmp.path());
  const auto events = read_events(path);
  BOOST_REQUIRE_EQUAL(events.size(), 5u);
  BOOST_TEST(events[0].file_version() == "brain.Event:2");
  BOOST_TEST(events[0].wall_time() > 1.7e9);
  BOOST_TEST(events[1].step() == 7);
  BOOST_REQUIRE_EQUAL(events[1].summary().value_size(), 2);
  BOOST_TEST(events[1].summary().value(0).tag() == "loss");
  BOOST_TEST(events[1].summary().value(0).simple_value() == 0.25f);
  BOOST_TEST(events[1].summary().value(1).tag() == "head_spans/1/0");
  BOOST_TEST(events[1].summary().value(1).simple_value() == 12.5f);
  const auto& image = events[2].summary().value(0).image();
  BOOST_TEST(image.width() == 30);
  BOOST_TEST(image.height() == 20);
  BOOST_TEST((image.colorspace() == 3 || image.colorspace() == 4));
  BOOST_TEST(image.encoded_image_string() == png_of_size(30, 20));
  const auto& text = events[3].summary().value(0);
  BOOST_TEST(text.metadata().plugin_data().plugin_name() == "text");
  BOOST_TEST(text.tensor().dtype() == tb::DT_STRING);
  BOOST_REQUIRE_EQUAL(text.tensor().string_val_size(), 1);
  BOOST_TEST(text.tensor().string_val(0) == "    a: 1\n");
  BOOST_TEST(events[4].session_log().status() == tb::SessionLog::START);
  BOOST_TEST(events[4].step() == 3);
}

BOOST_AUTO_TEST_CASE(every_finite_number_of_a_record_is_a_scalar) {
  const auto record = nlohmann::json::parse(
      R"({"step": 4, "loss": 0.5, "name": "x", "done": true, "val": null,
          "head_spans": [[1, 2], [3, 4.5]], "layers": [{"sigma": [0.1, -0.2], "path": "fused"}]})");
  // Keys in order, arrays by index; the string, the boolean, the null and "step" are left out.
  const std::vector<std::pair<std::string, double>> expected{
      {"head_spans/0/0", 1}, {"head_spans/0/1", 2}, {"head_spans/1/0", 3}, {"head_spans/1/1", 4.5},
      {"layers/0/sigma/0", 0.1}, {"layers/0/sigma/1", -0.2}, {"loss", 0.5}};
  const auto got = scalar_fields(record);
  BOOST_REQUIRE_EQUAL(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST(got[i].first == expected[i].first);
    BOOST_TEST(got[i].second == expected[i].second);
  }
  BOOST_TEST(markdown_code_block("a: 1\nb: [2]\n") == "    a: 1\n    b: [2]\n");
}

BOOST_AUTO_TEST_CASE(a_run_folder_logs_config_metrics_figures_and_restarts) {
  TempDir tmp;
  const fs::path dir = tmp / "run";
  {
    RunDir run(dir);
    int64_t steps = 3;
    Settings settings;
    settings.add("train.steps", steps, "steps");
    run.write_config(settings);
    for (int64_t step = 1; step <= 3; ++step) run.log_metrics({{"step", step}, {"loss", 1.0 / step}});
    run.log_metrics({{"note", "a record without a step: metrics.jsonl only"}, {"loss", 9.0}});
    write_bytes(run.figure_path("curves"), png_of_size(8, 6));
    run.log_figures(3);
  }
  BOOST_REQUIRE_EQUAL(event_files(dir).size(), 1u);
  const auto events = read_events(event_files(dir)[0]);
  BOOST_REQUIRE_EQUAL(events.size(), 6u);  // version, config, 3 metrics records, 1 figure
  BOOST_TEST(events[1].summary().value(0).tag() == "config");
  BOOST_TEST(events[1].summary().value(0).tensor().string_val(0) == markdown_code_block(read_text(dir / "config.yaml")));
  for (int step = 1; step <= 3; ++step) {
    const auto& e = events[static_cast<size_t>(step) + 1];
    BOOST_TEST(e.step() == step);
    BOOST_REQUIRE_EQUAL(e.summary().value_size(), 2);  // loss and time_s, as in metrics.jsonl
    BOOST_TEST(e.summary().value(0).tag() == "loss");
    BOOST_TEST(e.summary().value(0).simple_value() == static_cast<float>(1.0 / step));
    BOOST_TEST(e.summary().value(1).tag() == "time_s");
  }
  BOOST_TEST(events[5].summary().value(0).tag() == "figures/curves");
  BOOST_TEST(events[5].step() == 3);

  {  // resumed from step 2: a second file restarts the session at step 3
    RunDir run(dir, ExistingRun::Append);
    run.drop_metrics_after(2);
    run.log_metrics({{"step", 3}, {"loss", 0.3}});
  }
  BOOST_REQUIRE_EQUAL(event_files(dir).size(), 2u);
  const auto resumed = read_events(event_files(dir)[1]);
  BOOST_REQUIRE_EQUAL(resumed.size(), 3u);
  BOOST_TEST(resumed[1].session_log().status() == tb::SessionLog::START);
  BOOST_TEST(resumed[1].step() == 3);
  BOOST_TEST(resumed[2].step() == 3);

  {  // a new run in the old folder: the old run's events go
    RunDir run(dir, ExistingRun::Overwrite);
    run.log_metrics({{"step", 1}, {"loss", 2.0}});
  }
  BOOST_REQUIRE_EQUAL(event_files(dir).size(), 1u);
  const auto fresh = read_events(event_files(dir)[0]);
  BOOST_REQUIRE_EQUAL(fresh.size(), 2u);
  BOOST_TEST(fresh[1].summary().value(0).simple_value() == 2.0f);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

struct cifar_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    std::optional<fs::path> dir;
    try {
      dir = posgrad::try_find_data_dir();
    } catch (const std::exception&) {
    }
    boost::test_tools::assertion_result r(dir && fs::is_directory(*dir / "cifar10"));
    if (!r) r.message() << "skipped: CIFAR-10 not found (set " << posgrad::kDataDirEnv << ")";
    return r;
  }
};

const fs::path kBin = fs::path(POSGRAD_BIN_DIR);

}  // namespace

BOOST_AUTO_TEST_SUITE(tensorboard_apps)

BOOST_AUTO_TEST_CASE(charlm_logs_metrics_spans_figures_and_config) {
  TempDir tmp;
  const fs::path data = tmp / "text.txt", out = tmp / "run";
  std::string text;
  for (int i = 0; i < 80; ++i) text += i % 3 ? "the quick brown fox jumps over the lazy dog\n" : "to be or not to be\n";
  write_bytes(data, text);
  const std::string args =
      "train -Ddata.path=" + data.string() +
      " -Dmodel.layers=2 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.max_span=32 "
      "-Dmodel.span_ramp=8 -Dmodel.trim_granularity=8 -Dmodel.cache_margin=8 -Dtrain.batch_size=4 -Dtrain.segment=16 "
      "-Dtrain.warmup=1 -Dtrain.log_every=2 -Dtrain.eval_every=4 -Dtrain.checkpoint_every=4 -Deval.batch=2 "
      "-Dtrain.steps=4 --out " + out.string();
  const int rc = posgrad::test::run_app(kBin / "charlm", args, tmp / "log.txt", "OMP_NUM_THREADS=1 ");
  BOOST_REQUIRE_MESSAGE(rc == 0, "charlm failed:\n" << read_text(tmp / "log.txt"));
  const auto tags = event_tags(out);
  CHECK_TAGS(tags.scalars, "loss", "bpc", "lr", "span_avg", "val_loss", "head_spans/0/0", "head_spans/0/1",
             "head_spans/1/0", "head_spans/1/1");
  CHECK_TAGS(tags.images, "figures/span_mask", "figures/spans", "figures/learning_curves");
  CHECK_TAGS(tags.texts, "config");
}

BOOST_AUTO_TEST_CASE(posattn_logs_metrics_layer_spans_figures_and_config, *boost::unit_test::precondition(cifar_present())) {
  TempDir tmp;
  const fs::path out = tmp / "run";
  const std::string args =
      "--out " + out.string() +
      " -Ddata.image_size=8 -Ddata.small_dataset=600 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 "
      "-Dmodel.ff_width=16 -Dmodel.output_hidden=16 -Dmodel.span=true -Dmodel.threshold=0.1 -Dtrain.epochs=1 "
      "-Dtrain.eval_batch_size=50";
  const std::string env = "OMP_NUM_THREADS=1 ";
  BOOST_REQUIRE_MESSAGE(posgrad::test::run_app(kBin / "posattn", args, tmp / "train.txt", env) == 0,
                        read_text(tmp / "train.txt"));
  BOOST_REQUIRE_MESSAGE(posgrad::test::run_app(kBin / "posattn", "figures " + out.string() + " --images 1",
                                               tmp / "figures.txt", env) == 0,
                        read_text(tmp / "figures.txt"));
  const auto tags = event_tags(out);
  CHECK_TAGS(tags.scalars, "train_loss", "val_loss", "val_acc", "epoch", "layers/0/sigma/0", "layers/0/sigma/1",
             "layers/0/half_width/0", "layers/0/half_width/1");
  CHECK_TAGS(tags.images, "figures/curves", "figures/spans", "figures/encoding", "figures/attention");
  CHECK_TAGS(tags.texts, "config");
}

BOOST_AUTO_TEST_CASE(a_sweeps_runs_each_log_events_in_arm_and_seed_folders) {
  TempDir tmp;
  const fs::path file = tmp / "tiny.yaml", out = tmp / "out";
  std::ofstream(file) << "app: count24\n"
                         "set: {train.steps: 20, train.log_every: 10, train.eval_every: 20, train.checkpoint_every: 20, "
                         "data.train_size: 1000, data.test_size: 200}\n"
                         "metric: test_accuracy\n"
                         "seeds: [1, 2]\n"
                         "arms:\n"
                         "  - {name: fast, set: {train.lr: 0.05}}\n"
                         "  - {name: slow, set: {train.lr: 0.00001}}\n";
  const int rc = posgrad::test::run_app(kBin / "posgrad-sweep", file.string() + " --out " + out.string(), tmp / "log.txt",
                                        "OMP_NUM_THREADS=1 ");
  BOOST_REQUIRE_MESSAGE(rc == 0, read_text(tmp / "log.txt"));
  for (const char* arm : {"fast", "slow"})
    for (const char* seed : {"seed-1", "seed-2"}) {
      const fs::path run = out / arm / seed;
      BOOST_TEST(event_files(run).size() == 1u, run.string());
      const auto tags = event_tags(run);
      CHECK_TAGS(tags.scalars, "loss", "lr", "test_accuracy", "test_loss", "attention_on_2s_4s");
      CHECK_TAGS(tags.images, "figures/count24");
      CHECK_TAGS(tags.texts, "config");
    }
}

BOOST_AUTO_TEST_SUITE_END()

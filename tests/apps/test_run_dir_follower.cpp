// A follower RunDir (ExistingRun::Follow: the ranks other than 0 of a data-parallel run) writes
// nothing into the run folder, reads what the writer wrote, and its RunCheckpoints saves nothing
// but restores the writer's checkpoint; following a folder that does not exist is an error.
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "apps/common/settings.h"
#include "nn/linear.h"
#include "nn/sgd.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

// Every file under `dir` with its size: what must not change when a follower "writes".
std::vector<std::pair<std::string, uintmax_t>> listing(const fs::path& dir) {
  std::vector<std::pair<std::string, uintmax_t>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files.emplace_back(e.path().lexically_relative(dir).string(), e.is_regular_file() ? e.file_size() : 0);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_dir_follower)

BOOST_AUTO_TEST_CASE(a_follower_writes_nothing_and_reads_the_writers_run) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  Generator gen(3);
  Linear model(2, 2, true, gen), copy(2, 2, true, gen);  // different initial values
  SGD opt(model.parameters(), {.lr = 0.1}), copy_opt(copy.parameters(), {.lr = 0.1});
  Settings settings;
  int64_t steps = 7;
  settings.add("train.steps", steps, "steps");

  RunDir writer(dir, ExistingRun::Refuse);
  BOOST_TEST(writer.writes());
  writer.write_config(settings, "# data parallel: a note\n");
  BOOST_TEST(read_text(writer.config_path()) == "# data parallel: a note\n" + settings.to_yaml());
  writer.log_metrics({{"step", 1}, {"loss", 0.5}});
  RunCheckpoints written(writer, model, opt, gen);
  TrainingPosition at;
  at.step = 1;
  written.save(at);

  RunDir follower(dir, ExistingRun::Follow);
  BOOST_TEST(!follower.writes());
  const auto before = listing(dir);
  follower.write_config(settings, "# another note\n");
  follower.log_metrics({{"step", 2}, {"loss", 0.25}});
  follower.write_summary({{"done", true}});
  follower.write_text("vocab.json", "{}");
  follower.drop_metrics_after(0);
  follower.log_figures(2);
  RunCheckpoints followed(follower, copy, copy_opt, gen, {.metric = "loss", .higher_is_better = false});
  TrainingPosition later;
  later.step = 2;
  followed.save(later);
  BOOST_TEST(followed.offer_best(later, 1.0));  // kept as the best value, written nowhere
  BOOST_TEST(followed.best_value().value_or(0) == 1.0);
  BOOST_TEST((listing(dir) == before));

  const auto records = follower.read_metrics();
  BOOST_REQUIRE_EQUAL(records.size(), 1u);
  BOOST_TEST(records[0].at("loss").get<double>() == 0.5);
  const TrainingPosition restored = followed.restore_latest();
  BOOST_TEST(restored.step == 1);
  BOOST_TEST(copy.named_parameters()[0].second.value().to_vector<float>() ==
                 model.named_parameters()[0].second.value().to_vector<float>(),
             boost::test_tools::per_element());
  BOOST_TEST((listing(dir) == before));
}

BOOST_AUTO_TEST_CASE(following_a_missing_folder_is_an_error) {
  TempDir tmp;
  posgrad::test::check_error([&] { RunDir(tmp.path() / "nothing", ExistingRun::Follow); },
                             {"nothing", "does not exist", "rank 0 makes it"});
}

BOOST_AUTO_TEST_SUITE_END()

// The apps trained data-parallel, as `mpirun -np 2` (issue 29): a 2-rank run equals a 1-rank run
// with the same global batch (count24, charlm, posattn, cct, seqtasks, treetasks; with dropout and
// DropPath on for charlm, posattn, cct, seqtasks and treetasks), data parallel with gradient
// accumulation equals one large batch (posattn), a resumed 2-rank run repeats the uninterrupted
// one (with 2 ranks exactly, with 1 rank to the tolerance; cct's and seqtasks' 2-rank runs resumed
// as 1 rank, seqtasks' 1-rank run as 2), a
// batch the ranks cannot share is refused, a rank killed mid-run stops the others within seconds
// with the last checkpoint still loading, and posgrad-sweep runs a sweep's runs as 2 ranks.
// The apps overlap the gradients' all-reduce with the backward (the default); the 2-rank runs
// therefore check the overlapped path against the single process.
//
// Tolerance: the apps train in float32 (no app has a float64 setting). One process sums a
// gradient over the whole batch inside its kernels; two ranks sum each half and then add the
// halves in the all-reduce, so the two runs differ by float32 rounding of the summation order
// (losses agree to ~1e-7 relative after a few steps). The comparisons allow 2e-4 (relative, or
// absolute near zero), far below any change a wrong shard, a missing average or a second copy of
// a batch makes (those move the losses in the second or third digit).
// Skipped, saying why, in a build without MPI (POSGRAD_MPIEXEC empty); the posattn and cct cases
// also need CIFAR-10.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "app_process.h"
#include "apps/common/run_checkpoints.h"
#include "datasets/data_dir.h"
#include "nn/checkpoint.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace data_parallel_apps_tests {
namespace {

const fs::path kBin = POSGRAD_BIN_DIR;
const std::string kMpiexec = POSGRAD_MPIEXEC;

// The environment of ranks under mpirun: one OpenMP thread, and LeakSanitizer off (a no-op
// without sanitizers): OpenMPI's MPI_Init leaves allocations of plugins it unloads at
// MPI_Finalize, which can be neither symbolized nor suppressed (docs/distributed.md). The same
// app code runs under LeakSanitizer as one process in the other app tests.
const std::string kRankEnv = "OMP_NUM_THREADS=1 ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:detect_leaks=0\" ";

// `app args` as `ranks` processes (1: without mpirun), one OpenMP thread each; the exit status.
int launch(int ranks, const std::string& app, const std::string& args, const fs::path& log) {
  if (ranks == 1) return posgrad::test::run_app(kBin / app, args, log, "OMP_NUM_THREADS=1 ");
  const std::string env = kRankEnv;
  const std::string mpirun = kMpiexec + " --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) + " " +
                             (kBin / app).string();
  const std::string cmd = env + mpirun + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct mpi_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    if (!kMpiexec.empty()) return true;
    boost::test_tools::assertion_result r(false);
    r.message() << "skipped: posgrad was built without MPI (install libopenmpi-dev openmpi-bin and configure again)";
    return r;
  }
};

struct mpi_and_cifar_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id id) const {
    if (auto r = mpi_present{}(id); !r) return r;
    std::optional<fs::path> dir;
    try {
      dir = posgrad::try_find_data_dir();
    } catch (const std::exception& e) {
      boost::test_tools::assertion_result r(false);
      r.message() << e.what();
      return r;
    }
    if (dir && fs::is_directory(*dir / "cifar10")) return true;
    boost::test_tools::assertion_result r(false);
    r.message() << "skipped: CIFAR-10 not found (set " << posgrad::kDataDirEnv << ")";
    return r;
  }
};

constexpr double kTolerance = 2e-4;

bool close(double a, double b) { return std::abs(a - b) <= kTolerance * std::max(1.0, std::abs(b)); }

// Every number of `fields` in every record of the two runs' metrics.jsonl, within kTolerance.
void metrics_agree(const fs::path& a, const fs::path& b, const std::vector<std::string>& fields) {
  const auto ma = posgrad::test::metrics_without(a, {}), mb = posgrad::test::metrics_without(b, {});
  BOOST_REQUIRE_EQUAL(ma.size(), mb.size());
  BOOST_REQUIRE(!ma.empty());
  for (size_t i = 0; i < ma.size(); ++i) {
    BOOST_TEST(ma[i].at("step") == mb[i].at("step"));
    for (const std::string& f : fields) {
      if (!ma[i].contains(f)) continue;
      BOOST_REQUIRE(mb[i].contains(f));
      const double x = ma[i].at(f).get<double>(), y = mb[i].at(f).get<double>();
      BOOST_TEST(close(x, y), "record " << i << " " << f << ": " << x << " vs " << y);
    }
  }
}

// The parameters of the two runs' latest checkpoints, element by element, within kTolerance;
// `skipped` names parameters whose gradient is zero in exact arithmetic, so that their float32
// gradient is pure rounding noise, which Adam (dividing by its running RMS) turns into steps of
// about lr either way: count24's key bias and CCT's sequence-pooling bias (adding one number to
// every score of a softmax changes nothing).
void parameters_agree(const fs::path& a, const fs::path& b, const std::vector<std::string>& skipped = {}) {
  const auto ca = posgrad::load_checkpoint(posgrad::apps::run_checkpoint_folder(a, "latest"));
  const auto cb = posgrad::load_checkpoint(posgrad::apps::run_checkpoint_folder(b, "latest"));
  BOOST_TEST(ca.step == cb.step);
  BOOST_REQUIRE_EQUAL(ca.model.size(), cb.model.size());
  double worst = 0;
  std::string where;
  for (size_t i = 0; i < ca.model.size(); ++i) {
    BOOST_REQUIRE(ca.model[i].first == cb.model[i].first);
    if (ca.model[i].second.dtype() == posgrad::kInt64) continue;
    if (std::find(skipped.begin(), skipped.end(), ca.model[i].first) != skipped.end()) continue;
    const auto x = ca.model[i].second.to(posgrad::kFloat64).to_vector<double>();
    const auto y = cb.model[i].second.to(posgrad::kFloat64).to_vector<double>();
    BOOST_REQUIRE_EQUAL(x.size(), y.size());
    for (size_t k = 0; k < x.size(); ++k) {
      const double d = std::abs(x[k] - y[k]) / std::max(1.0, std::abs(y[k]));
      if (d > worst) {
        worst = d;
        where = ca.model[i].first + "[" + std::to_string(k) + "]: " + std::to_string(x[k]) + " vs " + std::to_string(y[k]);
      }
    }
  }
  BOOST_TEST(worst <= kTolerance, a.filename().string() << " vs " << b.filename().string()
                                      << ": largest parameter difference " << worst << " at " << where);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string sample_text() {
  const char* lines[] = {"the quick brown fox jumps over the lazy dog\n", "a stitch in time saves nine\n",
                         "to be or not to be, that is the question\n", "all that glitters is not gold\n"};
  std::string text;
  for (int i = 0; i < 60; ++i) text += lines[(i * 7 + i / 3) % 4];
  return text;
}

// A tiny charlm (dropout 0 unless a test adds it).
std::string charlm_tiny(const fs::path& data) {
  return "-Ddata.path=" + data.string() +
         " -Dmodel.layers=2 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.max_span=32 "
         "-Dmodel.span_ramp=8 -Dmodel.trim_granularity=8 -Dmodel.cache_margin=8 -Dmodel.span_loss=1e-4 "
         "-Dtrain.batch_size=4 -Dtrain.segment=16 -Dtrain.warmup=5 -Dtrain.log_every=2 -Dtrain.eval_every=4 "
         "-Dtrain.checkpoint_every=4 -Deval.batch=2";
}

const std::string kPosattnTiny =
    "-Ddata.image_size=8 -Ddata.small_dataset=600 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 "
    "-Dmodel.ff_width=16 -Dmodel.output_hidden=16 -Dmodel.span=true -Dmodel.threshold=0.1 -Dtrain.epochs=1 "
    "-Dtrain.eval_batch_size=60 -Dseed=5 -Dmodel.dropout=0";

void remove_step(const fs::path& run, int64_t keep) {
  const std::string name = posgrad::apps::step_folder_name(keep);
  for (const auto& entry : fs::directory_iterator(run / "checkpoints"))
    if (entry.path().filename().string().rfind("step-", 0) == 0 && entry.path().filename() != name)
      fs::remove_all(entry.path());
  write_file(run / "checkpoints" / "latest", name + "\n");
  write_file(run / "checkpoints" / "best", name + "\n");
}

// A tiny REVERSE: 49 training examples in batches of 16, so each epoch's last batch has one row
// (rank 0 computes it; rank 1 computes a row with weight 0), 4 steps an epoch, 2 epochs. With the
// presets' scale_grad_by_freq: each rank's embedding divides by a token's count in the global
// batch (nn/token_counts.h); counted in the rank's rows instead, the embedding's steps differ.
const std::string kSeqtasksTiny =
    "--config configs/seqtasks/quick.yaml --config configs/seqtasks/schemes/ape.yaml -Dtask=reverse "
    "-Ddata.length_mean=6 -Ddata.length_stddev=1 -Ddata.train=49 -Ddata.dev=16 -Ddata.test=16 "
    "-Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 "
    "-Dtrain.batch_size=16 -Dtrain.epochs=2 -Dtrain.warmup_epochs=1 -Dtrain.eval_every=1 -Dseed=3";

// A tiny tree ROTATE over the flattened sequence: 40 trees in batches of 16 (the last has 8).
const std::string kTreetasksTiny =
    "--config configs/treetasks/quick.yaml --config configs/treetasks/schemes/rope.yaml -Dtask=rotate -Dorder=depth "
    "-Ddata.depth_mean=3 -Ddata.train=40 -Ddata.dev=16 -Ddata.test=16 -Dmodel.width=16 -Dmodel.heads=2 "
    "-Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 -Dtrain.batch_size=16 -Dtrain.epochs=2 "
    "-Dtrain.warmup_epochs=1 -Dtrain.eval_every=1 -Dseed=3";

const std::vector<std::string> kTransductionMetrics = {"train_loss", "dev_loss", "dev_ppl", "lr"};

// The test scores of two transduction runs, within kTolerance.
void summaries_agree(const fs::path& a, const fs::path& b) {
  const auto sa = nlohmann::json::parse(read_text(a / "summary.json"));
  const auto sb = nlohmann::json::parse(read_text(b / "summary.json"));
  for (const char* key : {"test_ppl", "test_ppl_released", "best_dev_loss"})
    BOOST_TEST(close(sa.at(key).get<double>(), sb.at(key).get<double>()),
               key << ": " << sa.at(key) << " vs " << sb.at(key));
  BOOST_TEST(sa.at("best_epoch") == sb.at("best_epoch"));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(data_parallel_apps, *boost::unit_test::precondition(mpi_present()))

// seqtasks and treetasks as 2 ranks against 1 (the same global batch of 16), then each run cut
// back to its step-4 checkpoint (the end of epoch 1) and resumed with the other rank count.
BOOST_AUTO_TEST_CASE(transduction_apps_two_ranks_equal_one_and_resume_with_another_count) {
  TempDir tmp;
  const auto train = [&](int ranks, const std::string& app, const std::string& args, const fs::path& log) {
    BOOST_REQUIRE_MESSAGE(launch(ranks, app, args, log) == 0, read_text(log));
  };
  const fs::path s1 = tmp.path() / "s1", s2 = tmp.path() / "s2";
  train(1, "seqtasks", "train " + kSeqtasksTiny + " --out " + s1.string(), tmp.path() / "s1.txt");
  train(2, "seqtasks", "train " + kSeqtasksTiny + " --out " + s2.string(), tmp.path() / "s2.txt");
  metrics_agree(s1, s2, kTransductionMetrics);
  parameters_agree(s1, s2);
  summaries_agree(s1, s2);
  BOOST_TEST(read_text(s2 / "config.yaml").rfind("# data parallel: 2 ranks launched by mpirun (mpi); global batch 16 = 2 x 8 per rank", 0) == 0,
             read_text(s2 / "config.yaml").substr(0, 200));
  BOOST_TEST(read_text(s1 / "config.yaml").rfind("# data parallel: 1 rank ", 0) == 0);
  const auto summary = nlohmann::json::parse(read_text(s2 / "summary.json"));
  BOOST_TEST(summary.at("data_parallel").at("ranks").get<int>() == 2);

  // Resumed with the other rank count from the end of epoch 1.
  const fs::path r1 = tmp.path() / "r1", r2 = tmp.path() / "r2";
  fs::copy(s2, r1, fs::copy_options::recursive);
  remove_step(r1, 4);
  train(1, "seqtasks", "train --resume " + r1.string(), tmp.path() / "r1.txt");
  metrics_agree(s2, r1, kTransductionMetrics);
  parameters_agree(s2, r1);
  fs::copy(s1, r2, fs::copy_options::recursive);
  remove_step(r2, 4);
  train(2, "seqtasks", "train --resume " + r2.string(), tmp.path() / "r2.txt");
  metrics_agree(s1, r2, kTransductionMetrics);
  parameters_agree(s1, r2);
  summaries_agree(s1, r2);

  // With dropout on the embeddings, the residual branches and the attention probabilities (each
  // rank draws its rows' part of the global batch's masks, nn/mask_rows.h; rank 1's weight-0 row
  // of the last batch draws nothing the others see), and the masks do change the run.
  const fs::path d1 = tmp.path() / "d1", d2 = tmp.path() / "d2";
  const std::string dropout = " -Dmodel.dropout=0.3 -Dmodel.attention_dropout=0.2";
  train(1, "seqtasks", "train " + kSeqtasksTiny + dropout + " --out " + d1.string(), tmp.path() / "d1.txt");
  train(2, "seqtasks", "train " + kSeqtasksTiny + dropout + " --out " + d2.string(), tmp.path() / "d2.txt");
  metrics_agree(d1, d2, kTransductionMetrics);
  parameters_agree(d1, d2);
  summaries_agree(d1, d2);
  BOOST_TEST(posgrad::test::metrics_without(d1, {})[0].at("train_loss") != posgrad::test::metrics_without(s1, {})[0].at("train_loss"));

  const fs::path t1 = tmp.path() / "t1", t2 = tmp.path() / "t2";
  train(1, "treetasks", "train " + kTreetasksTiny + " -Dmodel.dropout=0.2 --out " + t1.string(), tmp.path() / "t1.txt");
  train(2, "treetasks", "train " + kTreetasksTiny + " -Dmodel.dropout=0.2 --out " + t2.string(), tmp.path() / "t2.txt");
  metrics_agree(t1, t2, kTransductionMetrics);
  parameters_agree(t1, t2);
  summaries_agree(t1, t2);
}

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_count24_and_charlm) {
  TempDir tmp;
  const std::string count24 =
      "-Ddata.train_size=2000 -Ddata.test_size=500 -Dtrain.batch_size=100 -Dtrain.steps=30 -Dtrain.log_every=10 "
      "-Dtrain.eval_every=10 -Dtrain.checkpoint_every=10";
  const fs::path c1 = tmp.path() / "c1", c2 = tmp.path() / "c2";
  BOOST_REQUIRE_MESSAGE(launch(1, "count24", count24 + " --out " + c1.string(), tmp.path() / "c1.txt") == 0,
                        read_text(tmp.path() / "c1.txt"));
  BOOST_REQUIRE_MESSAGE(launch(2, "count24", count24 + " --out " + c2.string(), tmp.path() / "c2.txt") == 0,
                        read_text(tmp.path() / "c2.txt"));
  metrics_agree(c1, c2, {"loss", "test_loss", "test_accuracy", "attention_on_2s_4s"});
  parameters_agree(c1, c2, {"key.bias"});

  const fs::path data = tmp.path() / "text.txt", l1 = tmp.path() / "l1", l2 = tmp.path() / "l2";
  write_file(data, sample_text());
  const std::string charlm = "train " + charlm_tiny(data) + " -Dtrain.steps=8";
  BOOST_REQUIRE_MESSAGE(launch(1, "charlm", charlm + " --out " + l1.string(), tmp.path() / "l1.txt") == 0,
                        read_text(tmp.path() / "l1.txt"));
  BOOST_REQUIRE_MESSAGE(launch(2, "charlm", charlm + " --out " + l2.string(), tmp.path() / "l2.txt") == 0,
                        read_text(tmp.path() / "l2.txt"));
  metrics_agree(l1, l2, {"loss", "val_loss", "span_avg"});
  parameters_agree(l1, l2);
  // With dropout on the attention probabilities and the FFN (each rank draws its rows' part of the
  // global batch's masks, nn/mask_rows.h), and the masks do change the run. With Adagrad (charlm's
  // optimizer) the metrics only: key_pe's columns just beyond a head's span get gradients that are
  // zero in exact arithmetic but rounding noise of about 1e-11 in float (Adagrad sums of squared
  // gradients of about 1e-22 there, differing between the 1- and 2-rank runs by a factor 2 or 3);
  // Adagrad divides a gradient by its own size, so each such entry steps by about lr (0.07) with
  // the noise's sign, key_pe differs there by up to 0.09 after 8 steps and, through it, the first
  // layer by about 1e-3, while every logged loss agrees to about 1e-6. With SGD, whose step is
  // lr times the gradient, the same runs' parameters agree.
  const fs::path d1 = tmp.path() / "d1", d2 = tmp.path() / "d2";
  BOOST_REQUIRE_MESSAGE(launch(1, "charlm", charlm + " -Dmodel.dropout=0.3 --out " + d1.string(), tmp.path() / "d1.txt") == 0,
                        read_text(tmp.path() / "d1.txt"));
  BOOST_REQUIRE_MESSAGE(launch(2, "charlm", charlm + " -Dmodel.dropout=0.3 --out " + d2.string(), tmp.path() / "d2.txt") == 0,
                        read_text(tmp.path() / "d2.txt"));
  metrics_agree(d1, d2, {"loss", "val_loss", "span_avg"});
  BOOST_TEST(posgrad::test::metrics_without(d1, {}).back().at("loss") != posgrad::test::metrics_without(l1, {}).back().at("loss"));
  const fs::path g1 = tmp.path() / "g1", g2 = tmp.path() / "g2";
  const std::string sgd = charlm + " -Dmodel.dropout=0.3 -Dtrain.optimizer=sgd -Dtrain.lr=0.5";
  BOOST_REQUIRE_MESSAGE(launch(1, "charlm", sgd + " --out " + g1.string(), tmp.path() / "g1.txt") == 0,
                        read_text(tmp.path() / "g1.txt"));
  BOOST_REQUIRE_MESSAGE(launch(2, "charlm", sgd + " --out " + g2.string(), tmp.path() / "g2.txt") == 0,
                        read_text(tmp.path() / "g2.txt"));
  metrics_agree(g1, g2, {"loss", "val_loss", "span_avg"});
  parameters_agree(g1, g2);

  // Rank 0 alone wrote the run folder, and said how the batch was shared.
  const std::string config = read_text(l2 / "config.yaml");
  BOOST_TEST(config.rfind("# data parallel: 2 ranks launched by mpirun (mpi); global batch 4 = 2 x 2 per rank", 0) == 0,
             config.substr(0, 200));
  int event_files = 0;
  for (const auto& entry : fs::directory_iterator(l2))
    event_files += entry.path().filename().string().rfind("events.out.tfevents", 0) == 0;
  BOOST_TEST(event_files == 1);
  const auto summary = nlohmann::json::parse(read_text(l2 / "summary.json"));
  BOOST_TEST(summary.at("data_parallel").at("ranks").get<int>() == 2);
  BOOST_TEST(summary.at("data_parallel").at("allreduce_bytes_per_step").get<double>() > 0);
}

BOOST_AUTO_TEST_CASE(a_batch_the_ranks_cannot_share_is_refused) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  const int rc = launch(2, "charlm", "train " + charlm_tiny(data) + " -Dtrain.batch_size=5 -Dtrain.steps=2 --out " +
                                         out.string(), tmp.path() / "log.txt");
  const std::string log = read_text(tmp.path() / "log.txt");
  BOOST_TEST(rc != 0);
  BOOST_TEST(log.find("train.batch_size 5 cannot be split evenly over 2 ranks") != std::string::npos, log);
  BOOST_TEST(!fs::exists(out));  // refused before anything was written
}

// A run resumed from its step-4 checkpoint: with 2 ranks it logs exactly what the uninterrupted
// 2-rank run logged; with 1 rank (the cache of all rows is in the checkpoint) it agrees to the
// tolerance.
BOOST_AUTO_TEST_CASE(a_resumed_two_rank_run_repeats_the_uninterrupted_one) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", a = tmp.path() / "a", b = tmp.path() / "b", c = tmp.path() / "c";
  write_file(data, sample_text());
  BOOST_REQUIRE_MESSAGE(launch(2, "charlm", "train " + charlm_tiny(data) + " -Dtrain.steps=8 --out " + a.string(),
                               tmp.path() / "a.txt") == 0,
                        read_text(tmp.path() / "a.txt"));
  for (const fs::path& copy : {b, c}) {
    fs::copy(a, copy, fs::copy_options::recursive);
    remove_step(copy, 4);
  }
  BOOST_REQUIRE_MESSAGE(launch(2, "charlm", "train --resume " + b.string(), tmp.path() / "b.txt") == 0,
                        read_text(tmp.path() / "b.txt"));
  const auto ma = posgrad::test::metrics_without(a, {"time_s", "train_seconds"});
  const auto mb = posgrad::test::metrics_without(b, {"time_s", "train_seconds"});
  BOOST_REQUIRE_EQUAL(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) BOOST_TEST(ma[i].dump() == mb[i].dump(), "record " << i);
  BOOST_REQUIRE_MESSAGE(launch(1, "charlm", "train --resume " + c.string(), tmp.path() / "c.txt") == 0,
                        read_text(tmp.path() / "c.txt"));
  metrics_agree(a, c, {"loss", "val_loss", "span_avg"});
  parameters_agree(a, c);
  BOOST_TEST(read_text(c / "config.yaml").rfind("# data parallel: 1 rank ", 0) == 0);
}

// A rank killed (SIGKILL) mid-run: mpirun stops the other within seconds with a line naming the
// dead rank, and the latest checkpoint still loads (eval reads it).
BOOST_AUTO_TEST_CASE(a_killed_rank_stops_the_run_and_the_last_checkpoint_loads) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run", log = tmp.path() / "log.txt";
  write_file(data, sample_text());
  const std::string marker = "POSGRAD_KILL_TEST=" + std::to_string(getpid());
  const std::string args = "--allow-run-as-root --oversubscribe -np 2 " + (kBin / "charlm").string() + " train " +
                           charlm_tiny(data) + " -Dtrain.steps=1000000 --out " + out.string();
  const pid_t mpirun = posgrad::test::start_app(kMpiexec, args, log, kRankEnv + marker + " ");
  // Wait for a checkpoint, then find rank 1 by its environment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (posgrad::test::latest_checkpoint_step(out) < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_REQUIRE_MESSAGE(posgrad::test::latest_checkpoint_step(out) >= 8, read_text(log));
  pid_t rank1 = -1;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto has = [&](const std::string& v) { return environ.find(std::string("\0", 1) + v + std::string("\0", 1)) != std::string::npos || environ.rfind(v + std::string("\0", 1), 0) == 0; };
    if (has(marker) && has("OMPI_COMM_WORLD_RANK=1")) rank1 = static_cast<pid_t>(std::stol(entry.path().filename().string()));
  }
  BOOST_REQUIRE(rank1 > 0);
  const auto killed = std::chrono::steady_clock::now();
  kill(rank1, SIGKILL);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(mpirun, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() - killed < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    kill(mpirun, SIGKILL);
    waitpid(mpirun, &status, 0);
    BOOST_FAIL("mpirun still ran 30 s after rank 1 was killed:\n" << read_text(log));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  BOOST_TEST(seconds < 10.0, "the run took " << seconds << " s to stop");
  BOOST_TEST(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  const std::string text = read_text(log);
  BOOST_TEST(text.find("rank 1") != std::string::npos, text);
  BOOST_TEST(text.find("signal 9") != std::string::npos, text);
  const fs::path eval_log = tmp.path() / "eval.txt";
  BOOST_TEST(launch(1, "charlm", "eval " + out.string() + " --checkpoint latest", eval_log) == 0, read_text(eval_log));
}

// A sweep file with `ranks: 2`: posgrad-sweep runs its run as `mpirun -np 2 count24 ...` (mpirun
// from PATH; OpenMPI's variables allow root and more ranks than cores), the run says so in its
// config.yaml and summary, and results.md names the launcher; --ranks 1 runs the app alone.
BOOST_AUTO_TEST_CASE(a_sweep_runs_its_runs_as_two_ranks) {
  TempDir tmp;
  const fs::path file = tmp.path() / "dp.yaml", out = tmp.path() / "out", log = tmp.path() / "sweep.txt";
  write_file(file,
             "app: count24\n"
             "set: {train.steps: 20, train.log_every: 10, train.eval_every: 10, train.checkpoint_every: 10, "
             "data.train_size: 1000, data.test_size: 200, train.batch_size: 50}\n"
             "metric: test_accuracy\n"
             "ranks: 2\n"
             "seeds: [1]\n");
  const std::string env = "PATH=" + fs::path(kMpiexec).parent_path().string() +
                          ":$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                          "OMPI_MCA_rmaps_base_oversubscribe=1 " + kRankEnv;
  const std::string sweep = (kBin / "posgrad-sweep").string() + " " + file.string() + " --out " + out.string();
  const int status = std::system((env + sweep + " > " + log.string() + " 2>&1").c_str());
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0, read_text(log));
  const fs::path run = out / "base" / "seed-1";
  // The sweep names the app beside its own executable, links resolved (the GPU bundle links build-gpu/bin).
  const std::string app = fs::weakly_canonical(kBin / "count24").string();
  BOOST_TEST(read_text(log).find("mpirun -np 2 " + app + " train") != std::string::npos,
             read_text(log));
  BOOST_TEST(read_text(run / "config.yaml").rfind("# data parallel: 2 ranks launched by mpirun", 0) == 0,
             read_text(run / "config.yaml").substr(0, 200));
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  BOOST_TEST(summary.at("data_parallel").at("ranks").get<int>() == 2);
  BOOST_TEST(read_text(out / "results.md").find("Every run was launched as `mpirun -np 2 count24`") != std::string::npos,
             read_text(out / "results.md"));

  const int dry = std::system((env + sweep + " --ranks 1 --dry-run -Dtrain.steps=30 > " + log.string() + " 2>&1").c_str());
  BOOST_TEST(WIFEXITED(dry));
  BOOST_TEST(read_text(log).find("mpirun") == std::string::npos, read_text(log));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(data_parallel_posattn, *boost::unit_test::precondition(mpi_and_cifar_present()))

// 2 ranks x batch 20 x accumulation 2 against 1 rank x batch 40 x accumulation 1: the same 40
// images per Adam step. The thesis does not divide the loss under accumulation, so the first
// run's gradient is twice the second's; Adam's step does not change with the gradient's scale
// (but for its epsilon), so parameters and losses agree to the tolerance.
BOOST_AUTO_TEST_CASE(two_ranks_with_accumulation_equal_one_large_batch) {
  TempDir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  BOOST_REQUIRE_MESSAGE(launch(2, "posattn", kPosattnTiny + " -Dtrain.batch_size=20 -Dtrain.accumulation=2 --out " +
                                                 a.string(), tmp.path() / "a.txt") == 0,
                        read_text(tmp.path() / "a.txt"));
  BOOST_REQUIRE_MESSAGE(launch(1, "posattn", kPosattnTiny + " -Dtrain.batch_size=40 -Dtrain.accumulation=1 --out " +
                                                 b.string(), tmp.path() / "b.txt") == 0,
                        read_text(tmp.path() / "b.txt"));
  metrics_agree(a, b, {"train_loss", "val_loss", "val_acc"});
  parameters_agree(a, b);
  BOOST_TEST(read_text(a / "config.yaml").find("global batch 20 = 2 x 10 per rank; 2 batches per optimizer step, so the "
                                               "effective batch is 40") != std::string::npos);
}

// 2 ranks x batch 20 against 1 rank x batch 20 with posattn's dropout (input, blocks, output) at
// 0.2: each rank draws its rows' part of the global batch's masks (nn/mask_rows.h).
BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_with_dropout) {
  TempDir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  const std::string args = kPosattnTiny + " -Dmodel.dropout=0.2 -Dtrain.batch_size=20 -Dtrain.accumulation=1 --out ";
  BOOST_REQUIRE_MESSAGE(launch(2, "posattn", args + a.string(), tmp.path() / "a.txt") == 0, read_text(tmp.path() / "a.txt"));
  BOOST_REQUIRE_MESSAGE(launch(1, "posattn", args + b.string(), tmp.path() / "b.txt") == 0, read_text(tmp.path() / "b.txt"));
  metrics_agree(a, b, {"train_loss", "val_loss", "val_acc"});
  parameters_agree(a, b);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(data_parallel_cct, *boost::unit_test::precondition(mpi_and_cifar_present()))

// cct as 2 ranks against 1 (batch 32: 16 per rank), with AutoAugment, crop and flip on (each
// image's augmentation depends on the seed, the epoch and the image alone) and token, FFN and
// attention dropout and DropPath on (each rank draws its rows' part of the global batch's masks:
// nn/mask_rows.h); then the 2-rank run resumed from its epoch-1 checkpoint as 1 rank.
BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_and_resume_as_one) {
  TempDir tmp;
  const std::string cct =
      "--config configs/cct/quick.yaml --config configs/cct/schemes/ape_grid.yaml -Ddata.small_dataset=500 "
      "-Dmodel.layers=2 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dtrain.batch_size=32 -Dtrain.epochs=2 "
      "-Dtrain.warmup_epochs=1 -Dtrain.paper_epochs=[1,2] -Dtrain.eval_batch_size=64 -Dseed=3 -Dmodel.dropout=0.1 "
      "-Dmodel.ff_dropout=0.1 -Dmodel.attention_dropout=0.1 -Dmodel.drop_path_step=0.3";
  const fs::path one = tmp.path() / "one", two = tmp.path() / "two", resumed = tmp.path() / "resumed";
  const auto train = [&](int ranks, const std::string& args, const fs::path& log) {
    BOOST_REQUIRE_MESSAGE(launch(ranks, "cct", args, log) == 0, read_text(log));
  };
  train(1, "train " + cct + " --out " + one.string(), tmp.path() / "one.txt");
  train(2, "train " + cct + " --out " + two.string(), tmp.path() / "two.txt");
  metrics_agree(one, two, {"train_loss", "val_loss", "val_acc", "test_acc", "lr"});
  // The pooling's bias shifts every token's score alike: its gradient is zero but for rounding
  // (it moved 0.000114 vs 0.000349 in the sanitizer build).
  const std::vector<std::string> rounding_only = {"pool.attention_pool.bias"};
  parameters_agree(one, two, rounding_only);
  BOOST_TEST(read_text(two / "config.yaml").rfind("# data parallel: 2 ranks launched by mpirun (mpi); global batch 32 = 2 x 16 per rank", 0) == 0,
             read_text(two / "config.yaml").substr(0, 200));
  const auto summary = nlohmann::json::parse(read_text(two / "summary.json"));
  BOOST_TEST(summary.at("data_parallel").at("ranks").get<int>() == 2);
  BOOST_TEST(summary.at("data_parallel").at("overlap").get<bool>());

  fs::copy(two, resumed, fs::copy_options::recursive);
  remove_step(resumed, 11);  // 360 training images / 32: 11 steps an epoch
  train(1, "train --resume " + resumed.string(), tmp.path() / "resumed.txt");
  metrics_agree(two, resumed, {"train_loss", "val_loss", "val_acc", "test_acc"});
  parameters_agree(two, resumed, rounding_only);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace data_parallel_apps_tests

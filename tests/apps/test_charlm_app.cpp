// End-to-end tests of the charlm app (apps/charlm): runs the built executable with a tiny model on
// a small text and checks what it wrote (summary, metrics with spans and the attention share,
// figures, vocab.json), the eval and sample jobs, that sampling is deterministic per seed, that
// --resume from a checkpoint repeats the uninterrupted run exactly (also when the latest
// checkpoint's cache file is missing or truncated: it falls back to the one before), that eval,
// sample and resume use the vocabulary the run trained on and say when the data file changed
// since, that eval and sample take their settings (-D, --config) before or after the job's name,
// that sample writes each character as it comes, and that bad input (an empty or one-character
// file, a segment longer than the data, an unknown character) is a clear error; that eval and
// sample refuse a checkpoint pointer that leads out of the run; and that training into a folder
// another process holds is refused, naming it; that model.span selects the dynamic span, whose span
// loss enters the training loss, and refuses a bad span in one line.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include "apps/common/run_dir.h"
#include "nn/checkpoint.h"
#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace charlm_app_tests {
namespace {
const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "charlm";

int run(const std::string& args, const fs::path& log) {
  return posgrad::test::run_app(kApp, args, log, "OMP_NUM_THREADS=1 ");
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A few thousand characters of text with structure (repeated lines) and 20-odd symbols.
std::string sample_text() {
  const char* lines[] = {"the quick brown fox jumps over the lazy dog\n", "a stitch in time saves nine\n",
                         "to be or not to be, that is the question\n", "all that glitters is not gold\n"};
  std::string text;
  for (int i = 0; i < 60; ++i) text += lines[(i * 7 + i / 3) % 4];
  return text;
}

std::string tiny(const fs::path& data) {
  return "-Ddata.path=" + data.string() +
         " -Dmodel.layers=2 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.max_span=32 "
         "-Dmodel.span_ramp=8 -Dmodel.trim_granularity=8 -Dmodel.cache_margin=8 -Dmodel.span_loss=1e-4 "
         "-Dtrain.batch_size=4 -Dtrain.segment=16 -Dtrain.warmup=5 -Dtrain.log_every=2 -Dtrain.eval_every=4 "
         "-Dtrain.checkpoint_every=4 -Deval.batch=2 -Dmodel.dropout=0.1";
}

std::vector<nlohmann::json> metrics_without_time(const fs::path& run_dir) {
  return posgrad::test::metrics_without(run_dir, {"time_s", "train_seconds"});
}

// Every letter moved one on (a -> b, ..., z -> a): the same symbols, so a vocabulary rebuilt from
// the new text has the old size and gives the new text the old ids.
std::string shift_letters(std::string text) {
  for (char& ch : text)
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>('a' + (ch - 'a' + 1) % 26);
  return text;
}

// Every byte one higher: a vocabulary rebuilt from the new text gives it exactly the old ids.
std::string shift_bytes(std::string text) {
  for (char& ch : text) ch = static_cast<char>(ch + 1);
  return text;
}

// The loss an eval job printed ("... loss 2.1234 nats/char ...").
double printed_loss(const std::string& log) {
  const size_t at = log.find(": loss ");
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "no loss in:\n" << log);
  return std::stod(log.substr(at + 7));
}
}  // namespace

BOOST_AUTO_TEST_SUITE(charlm_app)

BOOST_AUTO_TEST_CASE(trains_evaluates_and_samples) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  const int rc = run("train " + tiny(data) + " -Dtrain.steps=12 --out " + out.string(), tmp.path() / "log.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, "charlm failed:\n" << read_text(tmp.path() / "log.txt"));
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  const double val = summary.at("val_loss");
  BOOST_TEST_MESSAGE("charlm tiny run: val_loss " << val << ", span_avg " << summary.at("span_avg"));
  BOOST_TEST(std::isfinite(val));
  BOOST_TEST(val < std::log(24.0));  // better than uniform over the text's symbols
  BOOST_TEST(summary.at("steps") == 12);
  BOOST_TEST(summary.at("steps_planned") == 12);
  BOOST_TEST(summary.at("train_tokens") == 12 * 4 * 16);  // steps x train.batch_size x train.segment of tiny()
  for (const char* f : {"span_mask.png", "spans.png", "learning_curves.png"}) BOOST_TEST(fs::exists(out / "figures" / f), f);
  BOOST_TEST(fs::exists(out / "vocab.json"));
  fs::remove(out / "vocab.json");  // eval and sample read the vocabulary from the checkpoint
  const auto metrics = metrics_without_time(out);
  BOOST_REQUIRE(!metrics.empty());
  for (const char* key : {"loss", "bpc", "span_avg", "span_max", "attn_flops_share", "head_spans", "lr"})
    BOOST_TEST(metrics.back().contains(key), key);
  BOOST_TEST(metrics.back().at("span_avg").get<double>() >= 8.0);  // the ramp is counted, as the paper logs it
  BOOST_TEST(metrics.back().contains("val_loss"));

  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "eval.txt"), 0);
  BOOST_TEST(read_text(tmp.path() / "eval.txt").find("bpc") != std::string::npos);

  const std::string sample = "sample --checkpoint " + out.string() + " --prompt 'to be' --tokens 60 --temperature 0.8 --top-k 5 ";
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1", tmp.path() / "s1.txt"), 0);
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1", tmp.path() / "s1b.txt"), 0);
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 2", tmp.path() / "s2.txt"), 0);
  const std::string s1 = read_text(tmp.path() / "s1.txt"), s2 = read_text(tmp.path() / "s2.txt");
  BOOST_TEST(s1 == read_text(tmp.path() / "s1b.txt"));
  BOOST_TEST(s1 != s2);
  BOOST_TEST(s1.rfind("to be", 0) == 0);
  BOOST_TEST(s1.size() == std::string("to be").size() + 60 + 1);  // prompt, 60 characters, newline
  // The attention figure of the last generated characters.
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1 --figure " + (tmp.path() / "attention.png").string(), tmp.path() / "s3.txt"), 0);
  BOOST_TEST(fs::exists(tmp.path() / "attention.png"));
  BOOST_TEST(read_text(tmp.path() / "s3.txt").rfind(s1, 0) == 0);  // the same text, then the figure's path
}

// A run resumed from its step-4 checkpoint (the later one removed) logs exactly what the
// uninterrupted run logged: parameters, optimizer, generator, stream position and the cache.
BOOST_AUTO_TEST_CASE(resume_repeats_the_uninterrupted_run) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", a = tmp.path() / "a", b = tmp.path() / "b";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=8 --out " + a.string(), tmp.path() / "a.txt"), 0);
  fs::copy(a, b, fs::copy_options::recursive);
  BOOST_REQUIRE(fs::exists(b / "checkpoints" / "step-000000004"));
  fs::remove_all(b / "checkpoints" / "step-000000008");
  write_file(b / "checkpoints" / "latest", "step-000000004\n");
  write_file(b / "checkpoints" / "best", "step-000000004\n");
  const int rc = run("train --resume " + b.string(), tmp.path() / "b.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, read_text(tmp.path() / "b.txt"));
  // The done line counts the steps this process ran.
  BOOST_TEST(read_text(tmp.path() / "b.txt").find("train done: 4 steps (steps 5-8)") != std::string::npos);
  const auto ma = metrics_without_time(a), mb = metrics_without_time(b);
  BOOST_REQUIRE_EQUAL(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) BOOST_TEST(ma[i].dump() == mb[i].dump(), "record " << i);
  const auto sa = nlohmann::json::parse(read_text(a / "summary.json")), sb = nlohmann::json::parse(read_text(b / "summary.json"));
  BOOST_TEST(sa.at("val_loss").get<double>() == sb.at("val_loss").get<double>());
}

// The cache a step's checkpoint continues from is part of that checkpoint: when the latest one's
// cache file is missing or truncated, --resume falls back to the checkpoint before and still
// repeats the uninterrupted run exactly.
BOOST_AUTO_TEST_CASE(resume_falls_back_when_a_cache_file_is_broken) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", a = tmp.path() / "a";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=8 --out " + a.string(), tmp.path() / "a.txt"), 0);
  for (const std::string damage : {"missing", "truncated"}) {
    const fs::path b = tmp.path() / damage;
    fs::copy(a, b, fs::copy_options::recursive);
    // Where the cache of step 8 lives: in its step folder (before: beside it, in checkpoints/).
    fs::path cache;
    for (const fs::path& p : {b / "checkpoints" / "step-000000008" / "cache.safetensors",
                              b / "checkpoints" / "cache-000000008.safetensors"})
      if (fs::exists(p)) cache = p;
    BOOST_REQUIRE_MESSAGE(!cache.empty(), "no cache file of step 8 in " << b / "checkpoints");
    if (damage == "missing") fs::remove(cache);
    else fs::resize_file(cache, fs::file_size(cache) / 2);
    const fs::path log = tmp.path() / (damage + ".txt");
    BOOST_REQUIRE_MESSAGE(run("train --resume " + b.string(), log) == 0, damage << ":\n" << read_text(log));
    const std::string text = read_text(log);
    BOOST_TEST(text.find("instead of the latest checkpoint") != std::string::npos, damage << ":\n" << text);
    BOOST_TEST(text.find("train done: 4 steps (steps 5-8)") != std::string::npos, damage << ":\n" << text);
    const auto ma = metrics_without_time(a), mb = metrics_without_time(b);
    BOOST_REQUIRE_EQUAL(ma.size(), mb.size());
    for (size_t i = 0; i < ma.size(); ++i) BOOST_TEST(ma[i].dump() == mb[i].dump(), damage << " record " << i);
  }
}

// eval, sample and --resume read the text with the vocabulary the run trained on, and compare the
// data file with the one it trained on (its CRC-32 and size, recorded in the run): eval warns and
// scores the new text, --resume refuses.
BOOST_AUTO_TEST_CASE(eval_and_resume_use_what_the_run_trained_on) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=4 --out " + out.string(), tmp.path() / "t.txt"), 0);
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e0.txt"), 0);
  const std::string e0 = read_text(tmp.path() / "e0.txt");
  BOOST_TEST(e0.find("warning") == std::string::npos, e0);
  const double trained = printed_loss(e0);

  // The letters shifted: a vocabulary rebuilt from the file would score the old ids again.
  write_file(data, shift_letters(sample_text()));
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e1.txt"), 0);
  const std::string e1 = read_text(tmp.path() / "e1.txt");
  BOOST_TEST(e1.find("warning: " + data.string() + " is not the text this run trained on") != std::string::npos, e1);
  BOOST_TEST(printed_loss(e1) != trained);
  const fs::path log = tmp.path() / "resume.txt";
  BOOST_TEST(run("train --resume " + out.string(), log) == 1);
  BOOST_TEST(read_text(log).find(data.string() + " is not the text this run trained on") != std::string::npos,
             read_text(log));

  // Every byte shifted: before, eval rebuilt the vocabulary from the file and printed the first
  // number again; the run's vocabulary does not hold the new bytes, which is said.
  write_file(data, shift_bytes(sample_text()));
  BOOST_TEST(run("eval " + out.string(), tmp.path() / "e4.txt") == 1);
  const std::string e4 = read_text(tmp.path() / "e4.txt");
  BOOST_TEST(e4.find("is not the text this run trained on") != std::string::npos, e4);
  BOOST_TEST(e4.find("is not in the vocabulary") != std::string::npos, e4);

  // A byte the training split never held, at the front: a rebuilt vocabulary would be one larger
  // and every id after it one higher; the run's vocabulary still reads the validation split.
  write_file(data, "Q" + sample_text());
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e2.txt"), 0);
  BOOST_TEST(read_text(tmp.path() / "e2.txt").find("is not the text this run trained on") != std::string::npos);

  // The same text again: no warning, the first number.
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e3.txt"), 0);
  BOOST_TEST(read_text(tmp.path() / "e3.txt").find("warning") == std::string::npos);
  BOOST_TEST(printed_loss(read_text(tmp.path() / "e3.txt")) == trained);
}

// A run folder from before the vocabulary and the data record were stored (no vocab.json, no
// vocab_bytes in its checkpoints) still loads: the vocabulary is rebuilt from the data file, with
// a warning.
BOOST_AUTO_TEST_CASE(an_older_run_without_a_stored_vocabulary_still_loads) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=4 --out " + out.string(), tmp.path() / "t.txt"), 0);
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e0.txt"), 0);
  const double trained = printed_loss(read_text(tmp.path() / "e0.txt"));
  fs::remove(out / "vocab.json");
  for (const auto& entry : fs::directory_iterator(out / "checkpoints")) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("step-", 0) != 0) continue;
    posgrad::Checkpoint ck = posgrad::load_checkpoint(entry.path());
    std::erase_if(ck.model, [](const auto& named) { return named.first == "vocab_bytes"; });
    nlohmann::json state = nlohmann::json::parse(ck.extra_json);
    state["extra"].erase("data");
    ck.extra_json = state.dump();
    posgrad::save_checkpoint(entry.path(), ck);
  }
  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "e1.txt"), 0);
  const std::string e1 = read_text(tmp.path() / "e1.txt");
  BOOST_TEST(e1.find("warning") != std::string::npos, e1);
  BOOST_TEST(e1.find("rebuilt from") != std::string::npos, e1);
  BOOST_TEST(printed_loss(e1) == trained);
  BOOST_TEST(run("sample --checkpoint " + out.string() + " --prompt 'to be' --tokens 5", tmp.path() / "s.txt") == 0,
             read_text(tmp.path() / "s.txt"));
}

// eval and sample take the settings that concern them, from -D and --config before or after the
// job's name, and name the ones they ignore; the options of training are refused.
BOOST_AUTO_TEST_CASE(eval_and_sample_take_their_settings_in_either_position) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run", preset = tmp.path() / "eval.yaml";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=2 --out " + out.string(), tmp.path() / "t.txt"), 0);
  const std::string scored = "in 1 streams of blocks of 8";
  for (const std::string& args : {"-Deval.batch=1 -Deval.segment=8 eval " + out.string(),
                                  "eval " + out.string() + " -Deval.batch=1 -Deval.segment=8",
                                  "eval " + out.string() + " -Deval.segment=8 --config " + preset.string(),
                                  "--config " + preset.string() + " eval " + out.string() + " -Deval.segment=8"}) {
    write_file(preset, "eval:\n  batch: 1\n");
    const fs::path log = tmp.path() / "e.txt";
    BOOST_TEST(run(args, log) == 0, args << ":\n" << read_text(log));
    BOOST_TEST(read_text(log).find(scored) != std::string::npos, args << ":\n" << read_text(log));
  }
  const fs::path log = tmp.path() / "e.txt";
  BOOST_TEST(run("eval " + out.string() + " -Deval.batch=1 -Deval.segment=8 -Dmodel.width=64 -Dtrain.lr=1", log) == 0,
             read_text(log));
  BOOST_TEST(read_text(log).find(scored) != std::string::npos, read_text(log));
  BOOST_TEST(read_text(log).find("charlm eval: ignoring model.width, train.lr") != std::string::npos, read_text(log));
  // sample takes the device: a GPU that is not there stops it, before or after the job's name.
  for (const std::string& args : {"sample --checkpoint " + out.string() + " --tokens 5 -Ddevice=cuda:97",
                                  "-Ddevice=cuda:97 sample --checkpoint " + out.string() + " --tokens 5"}) {
    BOOST_TEST(run(args, log) == 1, args << ":\n" << read_text(log));
    BOOST_TEST(read_text(log).find("cuda:97") != std::string::npos, args << ":\n" << read_text(log));
  }
  BOOST_TEST(run("sample --checkpoint " + out.string() + " --tokens 5 -Deval.batch=3", log) == 0, read_text(log));
  BOOST_TEST(read_text(log).find("charlm sample: ignoring eval.batch") != std::string::npos, read_text(log));
  BOOST_TEST(run("eval " + out.string() + " --out " + (tmp.path() / "x").string(), log) == 1, read_text(log));
  BOOST_TEST(read_text(log).find("--out") != std::string::npos, read_text(log));
}

// Every registered relative scheme trains (siren, t5_bias, ape here), on both attention paths,
// and samples (ape rotates queries and keys: the K/V cache keeps counting positions); the old
// setting names (model.position, model.fused) still load, and the new model.attention refuses
// what it does not know.
BOOST_AUTO_TEST_CASE(registered_schemes_train_and_old_setting_names_load) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", log = tmp.path() / "t.txt";
  write_file(data, sample_text());
  for (const std::string& scheme : {"siren -Dmodel.positional_options=[hidden=8,normalized=false]",
                                    "t5_bias -Dmodel.positional_options=[buckets=8,max_distance=16]",
                                    "ape -Dmodel.attend_self=true"})
    for (const std::string& path : {"auto", "reference"}) {
      const fs::path out = tmp.path() / fmt::format("run_{}_{}", scheme.substr(0, scheme.find(' ')), path);
      const std::string args = "train " + tiny(data) + " -Dtrain.steps=3 -Dmodel.attention=" + path +
                               " -Dmodel.positional=" + scheme + " --out " + out.string();
      BOOST_TEST(run(args, log) == 0, args << ":\n" << read_text(log));
      BOOST_TEST(fs::exists(out / "summary.json"), args);
      BOOST_TEST(read_text(out / "config.yaml").find("positional: " + scheme.substr(0, scheme.find(' '))) !=
                 std::string::npos);
    }
  for (const std::string scheme : {"siren", "t5_bias", "ape"}) {
    const fs::path trained = tmp.path() / ("run_" + scheme + "_auto");
    BOOST_TEST(run("sample --checkpoint " + trained.string() + " --tokens 5", log) == 0, scheme << ":\n" << read_text(log));
  }
  const fs::path old = tmp.path() / "old";
  BOOST_TEST(run("train " + tiny(data) + " -Dtrain.steps=2 -Dmodel.position=alibi -Dmodel.fused=false --out " +
                     old.string(), log) == 0, read_text(log));
  const std::string config = read_text(old / "config.yaml");
  BOOST_TEST(config.find("positional: alibi") != std::string::npos, config);
  BOOST_TEST(config.find("attention: reference") != std::string::npos, config);
  BOOST_TEST(run("train " + tiny(data) + " -Dmodel.attention=fast --out " + (tmp.path() / "x").string(), log) == 1);
  BOOST_TEST(read_text(log).find("model.attention") != std::string::npos, read_text(log));
}

// model.span selects the dynamic span (each token's span from its input) next to key_pe: it trains
// through the executable and samples; its span loss enters the training loss (a large lambda
// shrinks the mean span z_t that metrics and summary report, lambda 0 does not); the old switch
// model.adaptive_span still loads; a bad span or span option is one clear error line.
// train.autocast=bf16 (tensor/autocast.h): every matmul multiplies bf16 operands. The run trains
// to about the float32 run's loss, and not to exactly it (the rounding acted); a bad value stops.
BOOST_AUTO_TEST_CASE(bf16_autocast_trains_near_the_float32_run) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", log = tmp.path() / "t.txt";
  write_file(data, sample_text());
  auto train = [&](const std::string& autocast) {
    const fs::path out = tmp.path() / autocast;
    const std::string args = "train " + tiny(data) + " -Dtrain.steps=8 -Dmodel.dropout=0 -Dtrain.autocast=" + autocast +
                             " --out " + out.string();
    BOOST_REQUIRE_MESSAGE(run(args, log) == 0, args << ":\n" << read_text(log));
    return out;
  };
  const fs::path f32 = train("none"), bf16 = train("bf16");
  const double loss_f32 = nlohmann::json::parse(read_text(f32 / "summary.json")).at("val_loss").get<double>();
  const double loss_bf16 = nlohmann::json::parse(read_text(bf16 / "summary.json")).at("val_loss").get<double>();
  BOOST_TEST_MESSAGE("validation loss after 8 steps: float32 " << loss_f32 << ", bf16 autocast " << loss_bf16);
  BOOST_TEST(std::isfinite(loss_bf16));
  BOOST_TEST(std::abs(loss_bf16 - loss_f32) < 0.02 * loss_f32);
  BOOST_TEST(loss_bf16 != loss_f32);
  BOOST_TEST(read_text(bf16 / "config.yaml").find("autocast: bf16") != std::string::npos);
  BOOST_TEST(run("train " + tiny(data) + " -Dtrain.autocast=fp16 --out " + (tmp.path() / "bad").string(), log) == 1);
  BOOST_TEST(read_text(log).find("train.autocast") != std::string::npos, read_text(log));
}

BOOST_AUTO_TEST_CASE(dynamic_span_trains_and_its_span_loss_enters_the_loss) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", log = tmp.path() / "t.txt";
  write_file(data, sample_text());
  // bias_init 0: z_t starts at S / 2 = 16 (v = 0), room to shrink in a few steps.
  auto train = [&](const std::string& name, const std::string& span_loss) {
    const fs::path out = tmp.path() / name;
    const std::string args = "train " + tiny(data) + " -Dtrain.steps=10 -Dmodel.dropout=0 -Dmodel.span=dynamic_span "
                             "-Dmodel.span_options=[bias_init=0] -Dtrain.optimizer=adamw -Dtrain.lr=0.3 -Dtrain.warmup=0 "
                             "-Dmodel.span_loss=" + span_loss + " --out " + out.string();
    BOOST_REQUIRE_MESSAGE(run(args, log) == 0, args << ":\n" << read_text(log));
    return out;
  };
  // The mean z_t of every head in the summary (the last forward's, the final evaluation's).
  auto mean_span = [](const nlohmann::json& head_spans) {
    double total = 0;
    int count = 0;
    for (const auto& layer : head_spans)
      for (double z : layer) total += z, ++count;
    BOOST_REQUIRE_EQUAL(count, 4);  // 2 layers x 2 heads
    return total / count;
  };
  const fs::path free = train("free", "0"), penalised = train("penalised", "1");
  const auto s_free = nlohmann::json::parse(read_text(free / "summary.json"));
  const auto s_penalised = nlohmann::json::parse(read_text(penalised / "summary.json"));
  const double z_free = mean_span(s_free.at("head_spans")), z_penalised = mean_span(s_penalised.at("head_spans"));
  BOOST_TEST_MESSAGE("dynamic span: mean z_t " << z_free << " with lambda 0, " << z_penalised << " with lambda 1");
  BOOST_TEST(z_penalised < 8.0);            // from 16: the span loss's gradient pushed b and v down
  BOOST_TEST(z_penalised < z_free - 4.0);   // and not the language-model loss alone
  // span_avg is the logger's ceil(mean z_t) + R per layer, at most S (32), averaged over the layers.
  double logged = 0;
  for (const auto& layer : s_penalised.at("head_spans"))
    logged += std::min(32.0, std::ceil((layer[0].get<double>() + layer[1].get<double>()) / 2) + 8.0) / 2;
  BOOST_TEST(s_penalised.at("span_avg").get<double>() == logged);
  BOOST_TEST(s_free.at("span_max").get<double>() <= 32.0);
  const auto metrics = metrics_without_time(penalised);
  BOOST_REQUIRE(!metrics.empty());
  BOOST_TEST(metrics.back().at("head_spans").size() == 2u);
  BOOST_TEST(metrics.back().at("span_avg").get<double>() >= 8.0);
  BOOST_TEST(read_text(penalised / "config.yaml").find("span: dynamic_span") != std::string::npos);
  BOOST_TEST(fs::exists(penalised / "figures" / "spans.png"));
  BOOST_TEST(run("sample --checkpoint " + penalised.string() + " --tokens 20", log) == 0, read_text(log));
  BOOST_TEST(run("eval " + penalised.string(), log) == 0, read_text(log));

  // charlm spans (Figure 5): z_t along 37 characters of the validation split (blocks of 16, 16
  // and 5), with the mean at word starts; the penalised run's spans are the shorter ones.
  auto spans_mean = [&](const fs::path& run_dir, int offset) {
    const fs::path figure = run_dir / "figures" / "text_spans.png";
    BOOST_REQUIRE_MESSAGE(run("spans " + run_dir.string() + " --chars 37 --offset " + std::to_string(offset) + " --figure " +
                                  figure.string(), log) == 0,
                          read_text(log));
    const std::string text = read_text(log);
    BOOST_TEST(text.find("37 characters of the validation split of text.txt from offset " + std::to_string(offset)) !=
                   std::string::npos, text);
    BOOST_TEST(text.find("predicting the first letter of a word") != std::string::npos, text);
    BOOST_TEST(fs::file_size(figure) > 1000u);
    const auto at = text.find("mean z_t ");
    BOOST_REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + 9));
  };
  const double spans_free = spans_mean(free, 0), spans_penalised = spans_mean(penalised, 5);
  BOOST_TEST(spans_penalised < spans_free - 4.0);
  BOOST_TEST(spans_penalised > 0.0);
  BOOST_TEST(run("spans " + penalised.string() + " --text 'to be or not'", log) == 0, read_text(log));
  BOOST_TEST(read_text(log).find("on the given text: mean z_t") != std::string::npos, read_text(log));
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {" --offset 100000", "--offset 100000 + --chars 256 is past the end of the validation split"},
           {" --text 'to be?'", "--text"},
           {" --chars 0", "--chars"}}) {
    BOOST_TEST(run("spans " + penalised.string() + args, log) != 0, args);
    const std::string text = read_text(log);
    BOOST_TEST(text.rfind("charlm: error: ", 0) == 0u, args << ":\n" << text);  // one error line first (a usage
    BOOST_TEST(text.find(expected) < text.find('\n'), args << ": expected '" << expected << "' in:\n" << text);  // hint may follow)
  }

  // The old switch: model.adaptive_span=false is span none (every head sees S).
  const fs::path old = tmp.path() / "old";
  BOOST_TEST(run("train " + tiny(data) + " -Dtrain.steps=2 -Dmodel.adaptive_span=false --out " + old.string(), log) == 0,
             read_text(log));
  BOOST_TEST(read_text(old / "config.yaml").find("span: none") != std::string::npos, read_text(old / "config.yaml"));
  BOOST_TEST(nlohmann::json::parse(read_text(old / "summary.json")).at("span_avg").get<double>() == 32.0);
  BOOST_TEST(run("spans " + old.string(), log) == 1);
  BOOST_TEST(read_text(log).find("has model.span = none, not dynamic_span") != std::string::npos, read_text(log));

  // Bad spans: one error line naming what is wrong.
  for (const auto& [setting, expected] : std::vector<std::pair<std::string, std::string>>{
           {"-Dmodel.span=dynamic", "model.span"},
           {"-Dmodel.span=gaussian_span", "model.span"},
           {"-Dmodel.span=dynamic_span -Dmodel.span_options=[ramp=4]", "span option 'ramp' comes from the model's span_ramp"},
           {"-Dmodel.span=dynamic_span -Dmodel.span_options=[sigma=1]", "unknown option sigma"},
           {"-Dmodel.span=dynamic_span -Dmodel.span_options=[bias_init]", "model.span_options: 'bias_init' is not key=value"},
           {"-Dmodel.span=dynamic_span -Dmodel.positional=rope -Dmodel.attend_self=true", "dynamic_span masks the current token"},
           {"-Dmodel.adaptive_span=maybe", "model.adaptive_span"}}) {
    const fs::path out = tmp.path() / "bad";
    BOOST_TEST(run("train " + tiny(data) + " -Dtrain.steps=2 " + setting + " --out " + out.string(), log) == 1, setting);
    const std::string text = read_text(log);
    BOOST_TEST(text.find(expected) != std::string::npos, setting << ": expected '" << expected << "' in:\n" << text);
    BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, setting << ": one line, got:\n" << text);
    BOOST_TEST(!fs::exists(out), setting);  // refused before the run folder is made
  }
}

// sample writes each character as it is drawn: a sample stopped early keeps what it wrote.
BOOST_AUTO_TEST_CASE(sample_writes_each_character_as_it_comes) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run", log = tmp.path() / "s.txt";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=2 --out " + out.string(), tmp.path() / "t.txt"), 0);
  const int rc = posgrad::test::run_app(kApp, "sample --checkpoint " + out.string() + " --prompt 'to be' --tokens 100000000",
                                        log, "OMP_NUM_THREADS=1 timeout 4 ");
  BOOST_TEST(rc == 124);  // stopped by timeout
  const std::string text = read_text(log);
  BOOST_TEST(text.rfind("to be", 0) == 0, text.substr(0, 200));
  BOOST_TEST(text.size() > std::string("to be").size() + 20, "sample wrote " << text.size() << " bytes");
  // A figure of the attention while generating needs characters generated and fed back.
  for (const char* tokens : {"0", "1"}) {
    const fs::path figure = tmp.path() / "attention.png";
    BOOST_TEST(run(std::string("sample --checkpoint ") + out.string() + " --tokens " + tokens + " --figure " +
                       figure.string(), log) != 0, read_text(log));
    BOOST_TEST(read_text(log).find("--figure needs --tokens 2 or more") != std::string::npos, read_text(log));
    BOOST_TEST(!fs::exists(figure));
  }
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_clear_error) {
  TempDir tmp;
  auto fails_with = [&](const std::string& args, const std::string& expected) {
    const fs::path log = tmp.path() / "log.txt";
    const int rc = run(args, log);
    const std::string text = read_text(log);
    BOOST_TEST(rc == 1, args << " -> " << rc << ":\n" << text);
    BOOST_TEST(text.find(expected) != std::string::npos, "expected '" << expected << "' in:\n" << text);
  };
  const fs::path empty = tmp.path() / "empty.txt", one = tmp.path() / "one.txt", data = tmp.path() / "text.txt";
  write_file(empty, "");
  write_file(one, "x");
  write_file(data, sample_text());
  fails_with("train " + tiny(empty) + " --out " + (tmp.path() / "r1").string(), "empty");
  fails_with("train " + tiny(one) + " --out " + (tmp.path() / "r2").string(), "training split has");
  fails_with("train " + tiny(data) + " -Dtrain.segment=5000 --out " + (tmp.path() / "r3").string(),
             "a segment of 5000 needs 5001 per row");
  // A validation character the training split never saw.
  write_file(tmp.path() / "novel.txt", sample_text() + std::string(100, 'Q'));
  fails_with("train " + tiny(tmp.path() / "novel.txt") + " --out " + (tmp.path() / "r4").string(), "character 'Q'");

  const fs::path out = tmp.path() / "run";
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=2 --out " + out.string(), tmp.path() / "ok.txt"), 0);
  fails_with("sample --checkpoint " + out.string() + " --prompt 'to be#' --tokens 5", "character '#' at offset 5");
  fails_with("sample --checkpoint " + out.string() + " --prompt '' --tokens 5", "prompt is empty");
  write_file(tmp.path() / "other.txt", "ZZZ");
  fails_with("eval " + out.string() + " --file " + (tmp.path() / "other.txt").string(), "character 'Z'");
}

// Issue 23 item 6: eval and sample followed a `best` (or `latest`) pointer into another run and
// silently used its checkpoint.
BOOST_AUTO_TEST_CASE(eval_and_sample_refuse_a_pointer_out_of_the_run) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", a = tmp.path() / "a", b = tmp.path() / "b";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=4 --out " + a.string(), tmp.path() / "a.txt"), 0);
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=8 -Dseed=5 --out " + b.string(), tmp.path() / "b.txt"), 0);
  write_file(a / "checkpoints" / "best", "../../b/checkpoints/step-000000008\n");
  write_file(a / "checkpoints" / "latest", "../../b/checkpoints/step-000000008\n");
  for (const std::string& job : {"eval " + a.string(), "eval " + a.string() + " --checkpoint latest",
                                 "sample --checkpoint " + a.string() + " --prompt 'to be' --tokens 5",
                                 "sample --checkpoint " + a.string() + " --which latest --prompt 'to be' --tokens 5"}) {
    BOOST_TEST(run(job, tmp.path() / "log.txt") == 1, job);
    const std::string log = read_text(tmp.path() / "log.txt");
    BOOST_TEST(log.find("holds \"../../b/checkpoints/step-000000008\", not the name of a step folder of this run") !=
                   std::string::npos,
               job << ": " << log);
  }
}

// Issue 23 item 1 for charlm (the issue's own case): a run into a folder another process writes
// (here: this test, holding the folder's lock) is refused before it changes anything.
BOOST_AUTO_TEST_CASE(training_into_a_locked_folder_is_refused) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  posgrad::apps::RunDir holder(out);
  holder.log_metrics({{"step", 1}});
  BOOST_TEST(run("train " + tiny(data) + " -Dtrain.steps=2 --out " + out.string() + " --overwrite", tmp.path() / "log.txt") == 1);
  const std::string log = read_text(tmp.path() / "log.txt");
  BOOST_TEST(log.find(fmt::format("run folder '{}' is in use by pid {}", out.string(), ::getpid())) != std::string::npos, log);
  BOOST_TEST(!fs::exists(out / "config.yaml"));
  const std::string metrics = read_text(out / "metrics.jsonl");
  BOOST_TEST(std::count(metrics.begin(), metrics.end(), '\n') == 1, metrics);  // the holder's record only
}

// Issue 23 item 8: an empty path (an unset shell variable) is a usage error for every path option
// of the jobs, not "the current folder" or "no file".
BOOST_AUTO_TEST_CASE(empty_paths_are_usage_errors) {
  TempDir tmp;
  const std::string run_dir = (tmp.path() / "run").string();
  for (const std::string& args : {std::string("eval ''"), "eval " + run_dir + " --file ''", std::string("sample --checkpoint ''"),
                                  "sample --checkpoint " + run_dir + " --figure ''"}) {
    BOOST_TEST(run(args, tmp.path() / "log.txt") == 2, args);
    const std::string log = read_text(tmp.path() / "log.txt");
    BOOST_TEST(log.find("an empty path is not a folder or a file") != std::string::npos, args << ": " << log);
  }
}

// Without Tiny Shakespeare in the data folder the error names the command that fetches it there.
BOOST_AUTO_TEST_CASE(missing_corpus_names_the_fetch_command) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "empty_data");
  const fs::path log = tmp.path() / "log.txt";
  const int rc = run("train -Ddata.data_dir=" + (tmp.path() / "empty_data").string() + " --out " +
                         (tmp.path() / "r").string(),
                     log);
  const std::string text = read_text(log);
  BOOST_TEST(rc == 1, text);
  BOOST_TEST(text.find((tmp.path() / "empty_data" / "tinyshakespeare" / "input.txt").string() + ": file not found") !=
                 std::string::npos,
             text);
  BOOST_TEST(text.find("posgrad-data fetch tinyshakespeare --dir " + (tmp.path() / "empty_data").string()) !=
                 std::string::npos,
             text);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace charlm_app_tests

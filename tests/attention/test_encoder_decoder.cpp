// The encoder-decoder of the APE transduction tasks (attention/transduction/):
//   * golden PyTorch files (tools/golden_encoder_decoder.py): 1 + 1 layers in float64, APE post-LN
//     with scale_grad_by_freq and label smoothing, sinusoidal pre-LN, tree APE post-LN on heap
//     positions: the encoder output, the logits, the loss, every gradient, 3 AdamW steps, on the
//     CPU and (where there is one) on the GPU;
//   * APE's maps (sequence and tree) are computed once per forward for all of the model's
//     attentions, with the outputs and every gradient of computing them in each attention;
//   * the decoder is causal (on tree positions too), decoding with the key/value caches gives the states of one decode
//     over the whole sequence, and greedy decoding with the cache gives the tokens of decoding
//     the whole prefix again, for every sequence scheme of Table 2(a);
//   * a tiny model trained a few hundred steps solves COPY by greedy decoding.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "attention/transduction/encoder_decoder.h"
#include "attention/transduction/greedy_decoding.h"
#include "datasets/transduction/sequence_tasks.h"
#include "datasets/transduction/tree_tasks.h"
#include "nn/adam.h"
#include "nn/losses.h"
#include "nn/safetensors.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"

using namespace posgrad;
using posgrad::test::expect_close;
namespace bdata = boost::unit_test::data;

namespace {

// Our parameter name -> the golden file's (the encoder layer's attention is "attn" here, APE's
// generators sit in the hook's "orthogonal" child).
std::string golden_name(std::string name) {
  const auto replace = [&](const std::string& from, const std::string& to) {
    const auto at = name.find(from);
    if (at != std::string::npos) name.replace(at, from.size(), to);
  };
  if (name.rfind("encoder.layers.", 0) == 0) replace(".attn.", ".self_attention.");
  replace("positional.orthogonal.generators", "positional.generators");
  return name;
}

TransductionBatch golden_batch(const SafetensorsContents& golden) {
  TransductionBatch b;
  b.source = golden.at("source");
  b.source_mask = golden.at("source_mask");
  b.decoder_input = golden.at("decoder_input");
  b.decoder_target = golden.at("decoder_target");
  b.decoder_mask = golden.at("decoder_mask");
  if (golden.contains("source_heap")) {
    b.source_heap = golden.at("source_heap");
    b.decoder_heap = golden.at("decoder_heap");
  }
  return b;
}

EncoderDecoderConfig golden_config(const nlohmann::json& cfg) {
  EncoderDecoderConfig c;
  c.vocab = cfg["vocab"];
  c.width = cfg["width"];
  c.heads = cfg["heads"];
  c.ff_width = cfg["ff"];
  c.encoder_layers = cfg["encoder_layers"];
  c.decoder_layers = cfg["decoder_layers"];
  c.dropout = 0;
  c.attention_dropout = 0;
  c.pre_norm = cfg["pre_norm"];
  c.scale_grad_by_freq = cfg["scale_grad_by_freq"];
  c.path = AttentionPath::Reference;
  const std::string positional = cfg["positional"];
  const std::string decay = fmt::format("{}", cfg["decay"].get<double>());
  if (positional == "sinusoidal") {
    c.positional = {"sinusoidal", {}};
  } else if (cfg["structure"] == "tree") {
    c.positional = {"ape_tree", HookOptions{{"decay", decay}}};
    c.tree_positions = true;
  } else {
    c.positional = {"ape", HookOptions{{"decay", decay}}};
  }
  return c;
}

// The batch's tensors on `device`.
const char* kEncoderDecoderGoldenFiles[] = {"ape_postnorm", "sinusoidal_prenorm", "ape_tree_postnorm"};

// Loads golden file `name` into a model on `device` and compares everything with it (values come
// back to the CPU for the comparison).
void check_golden_encoder_decoder(const std::string& name, Device device) {
  const auto golden = load_safetensors(std::string(POSGRAD_SOURCE_DIR) + "/tests/golden/encoder_decoder_" + name +
                                       ".safetensors");
  const auto cfg = nlohmann::json::parse(golden.metadata.at("config"));
  Generator gen(1);
  EncoderDecoder model(golden_config(cfg), gen);
  model.to(kFloat64);
  StateDict weights;
  for (const auto& [ours, p] : model.named_parameters()) weights.emplace_back(ours, golden.at("param." + golden_name(ours)));
  model.load_state_dict(weights, /*strict=*/true);
  model.to(device);
  size_t golden_params = 0;
  for (const auto& [key, t] : golden.tensors) golden_params += key.rfind("param.", 0) == 0;
  BOOST_TEST(model.named_parameters().size() == golden_params);  // no parameter left out on either side

  const TransductionBatch batch = golden_batch(golden).to(device);
  const double smoothing = cfg["label_smoothing"];
  const auto loss_of = [&] {
    return cross_entropy(model.forward(batch), batch.decoder_target, Reduction::Mean, kIgnoreTarget, smoothing);
  };
  const Positions source_at = model.source_positions(batch);
  const Tensor padding = batch.source_padding();
  expect_close("encoder_output", model.encode(batch.source, padding, &source_at).value(), golden.at("encoder_output"),
               1e-10, 1e-8);
  expect_close("logits", model.forward(batch).value(), golden.at("logits"), 1e-10, 1e-8);
  Variable loss = loss_of();
  expect_close("loss", loss.value().reshape({1}), golden.at("loss").reshape({1}), 1e-12, 1e-10);
  loss.backward();
  for (const auto& [ours, p] : model.named_parameters()) {
    BOOST_REQUIRE_MESSAGE(p.grad().defined(), "no gradient for " << ours);
    expect_close("grad." + ours, p.grad(), golden.at("grad." + golden_name(ours)), 1e-10, 1e-7);
  }
  AdamW opt(model.parameters(), {.lr = cfg["lr"], .weight_decay = cfg["weight_decay"]});
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Variable l = loss_of();
    l.backward();
    opt.step();
    losses.push_back(l.item());
  }
  expect_close("adamw_losses (3 steps)", Tensor::from_vector(losses, {3}), golden.at("adamw_losses"), 1e-10, 1e-9);
  for (const auto& [ours, p] : model.named_parameters())
    expect_close("after_adamw." + ours, p.value(), golden.at("after_adamw." + golden_name(ours)), 1e-9, 1e-7);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(encoder_decoder)

// ape_tree_postnorm: tree APE on heap positions, depth-first targets; the decoder's
// self-attention is causal in token order (the traversal-derived mask, spec 7.3).
BOOST_DATA_TEST_CASE(matches_pytorch, bdata::make(kEncoderDecoderGoldenFiles), name) {
  check_golden_encoder_decoder(name, kCPU);
}

namespace {

// A 2 + 2 layer model without dropout, for counting and comparing APE's maps ("ape", "ape_tree"
// on heap positions, or "ape_tree_shared_heads").
EncoderDecoderConfig maps_config(const std::string& scheme) {
  EncoderDecoderConfig c;
  c.vocab = 24;
  c.width = 16;
  c.heads = 2;
  c.ff_width = 32;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.dropout = 0;
  c.attention_dropout = 0;
  c.tree_positions = scheme != "ape";
  c.positional = scheme == "ape_tree_shared_heads" ? HookSpec{"ape_tree", {{"shared_heads", "true"}}} : HookSpec{scheme, {}};
  return c;
}

}  // namespace

// APE the paper's way: one table of maps per forward for all of the model's attentions (2 + 2
// layers: 6 attention calls), one per encode or decode call outside a forward.
BOOST_AUTO_TEST_CASE(ape_maps_computed_once_per_forward) {
  Generator gen(4);
  EncoderDecoder model(maps_config("ape"), gen);
  BOOST_REQUIRE(model.ape_maps() != nullptr);
  const auto examples = make_sequence_splits(SequenceTask::Reverse, {.vocab_size = 7, .length_mean = 5, .length_stddev = 1},
                                             {.train = 3, .dev = 1, .test = 1}, 5).train;
  const TransductionBatch batch = make_transduction_batch(examples, {0, 1, 2});
  model.forward(batch);
  BOOST_TEST(model.ape_maps()->tables_computed() == 1);
  model.forward(batch);
  BOOST_TEST(model.ape_maps()->tables_computed() == 2);  // a new table per forward (the generators change)
  greedy_decode(model, batch.source, batch.source_padding(), Tensor::zeros({3}, kInt64), {.steps = 4});
  BOOST_TEST(model.ape_maps()->tables_computed() == 2 + 1 + 4);  // the encoder, then each cached step
  BOOST_TEST(model.ape_maps()->rotations_without_held_maps() == 0);  // every attention used the held maps
}

namespace {

// A batch of 4 ROTATE examples (depth-first targets) on trees of depth about 3, with heap positions.
TransductionBatch small_tree_batch() {
  const TreeTaskSettings task{.output_order = TreeOrder::DepthFirst, .depth_mean = 3.0, .depth_stddev = 1.0};
  const auto examples = make_tree_splits(TreeTask::Rotate, task, {.train = 4, .dev = 1, .test = 1}, 5).train;
  return make_transduction_batch(examples, {0, 1, 2, 3});
}

}  // namespace

// Tree APE the paper's way: the maps of the union of the batch's encoder and decoder heap
// positions once per forward (one for the encoder alone, one per decode call), used by all 6
// attention calls of a 2 + 2 layer model.
BOOST_AUTO_TEST_CASE(tree_ape_maps_computed_once_per_forward) {
  Generator gen(4);
  EncoderDecoder model(maps_config("ape_tree"), gen);
  BOOST_REQUIRE(model.ape_maps() != nullptr);
  const TransductionBatch batch = small_tree_batch();
  model.forward(batch);
  BOOST_TEST(model.ape_maps()->tables_computed() == 1);
  const Positions source_at = model.source_positions(batch), decoder_at = model.decoder_positions(batch);
  const Tensor padding = batch.source_padding();
  const Variable memory = model.encode(batch.source, padding, &source_at);
  BOOST_TEST(model.ape_maps()->tables_computed() == 2);
  model.decode(batch.decoder_input, memory, padding, &decoder_at, &source_at);
  BOOST_TEST(model.ape_maps()->tables_computed() == 3);
  BOOST_TEST(model.ape_maps()->rotations_without_held_maps() == 0);
  // A layer called outside any scope: the wrapped hook computes the maps itself.
  model.encoder_layer(0).forward(memory, AttentionMasks{.key_padding = padding}, &source_at);
  BOOST_TEST(model.ape_maps()->tables_computed() == 3);
  BOOST_TEST(model.ape_maps()->rotations_without_held_maps() == 1);
  EncoderDecoder per_attention(
      [] {
        EncoderDecoderConfig c = maps_config("ape_tree");
        c.ape_maps_once = false;
        return c;
      }(),
      gen);
  BOOST_TEST(per_attention.ape_maps() == nullptr);
}

// Maps once per forward or in each attention call: the same logits and the same gradient of
// every parameter (float64; the generators' gradient is summed in another order).
BOOST_DATA_TEST_CASE(ape_maps_once_equal_maps_per_attention, bdata::make({"ape", "ape_tree", "ape_tree_shared_heads"}),
                     scheme) {
  const TransductionBatch batch = small_tree_batch();
  std::vector<Tensor> logits, grads;
  std::vector<std::string> names;
  for (const bool once : {true, false}) {
    EncoderDecoderConfig c = maps_config(scheme);
    c.ape_maps_once = once;
    Generator gen(6);
    EncoderDecoder model(c, gen);
    model.to(kFloat64);
    BOOST_TEST((model.ape_maps() != nullptr) == once);
    const Variable out = model.forward(batch);
    logits.push_back(out.value());
    cross_entropy(out, batch.decoder_target, Reduction::Mean, kIgnoreTarget).backward();
    for (const auto& [name, p] : model.named_parameters()) {
      BOOST_REQUIRE_MESSAGE(p.grad().defined(), "no gradient for " << name);
      grads.push_back(p.grad());
      if (once) names.push_back(name);
    }
  }
  expect_close(fmt::format("{} logits", scheme), logits[0], logits[1], 1e-13, 1e-12);
  BOOST_REQUIRE(grads.size() == 2 * names.size());
  for (size_t i = 0; i < names.size(); ++i)
    expect_close(fmt::format("{} grad.{}", scheme, names[i]), grads[i], grads[i + names.size()], 1e-13, 1e-11);
}

// The cache changes the cost of a step, never its tokens.
BOOST_DATA_TEST_CASE(greedy_decoding_with_cache_equals_without,
                     bdata::make({"ape", "rope", "shaw", "sinusoidal", "learned_absolute", "none"}) *
                         bdata::make({false, true}),
                     scheme, pre_norm) {
  EncoderDecoderConfig c;
  c.vocab = 9;
  c.width = 16;
  c.heads = 2;
  c.ff_width = 32;
  c.encoder_layers = 1;
  c.decoder_layers = 2;
  c.pre_norm = pre_norm;
  c.max_positions = 32;
  c.positional = {scheme, {}};
  Generator gen(3);
  EncoderDecoder model(c, gen);
  model.to(kFloat64);
  const Tensor source = Tensor::from_vector<int64_t>({1, 5, 2, 7, 3, 0, 4, 4, 6, 1, 0, 0}, {2, 6});
  const Tensor padding = Tensor::from_vector<float>({0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1}, {2, 6});
  const Tensor first = Tensor::from_vector<int64_t>({0, 3}, {2});
  const Tensor cached = greedy_decode(model, source, padding, first, {.steps = 9, .use_cache = true});
  const Tensor full = greedy_decode(model, source, padding, first, {.steps = 9, .use_cache = false});
  BOOST_TEST(cached.shape() == (Shape{2, 10}), boost::test_tools::per_element());
  BOOST_TEST(cached.to_vector<int64_t>() == full.to_vector<int64_t>(), boost::test_tools::per_element());
  BOOST_TEST(model.is_training());  // the mode is restored
}

// Learning, end to end: COPY over 6 tokens, words of about 6, solved by greedy decoding after 300
// AdamW steps of a 1 + 1 layer APE model (each training word seen once).
BOOST_AUTO_TEST_CASE(tiny_model_learns_copy) {
  const SequenceTaskSettings task{.vocab_size = 6, .length_mean = 6.0, .length_stddev = 1.0};
  const TransductionSplits data = make_sequence_splits(SequenceTask::Copy, task, {.train = 9600, .dev = 1, .test = 32}, 7);
  EncoderDecoderConfig c;
  c.vocab = task.vocab_size + 2;
  c.width = 32;
  c.heads = 2;
  c.ff_width = 64;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.dropout = 0;
  c.attention_dropout = 0;
  c.positional = {"ape", {}};
  Generator gen(11);
  EncoderDecoder model(c, gen);
  AdamW opt(model.parameters(), {.lr = 3e-3, .weight_decay = 0.0});
  const int64_t batch_size = 32, steps = 300;
  double last_loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<int64_t> indices(static_cast<size_t>(batch_size));
    std::iota(indices.begin(), indices.end(), step * batch_size);  // every word once
    const TransductionBatch batch = make_transduction_batch(data.train, indices);
    Variable loss = cross_entropy(model.forward(batch), batch.decoder_target, Reduction::Mean, kIgnoreTarget);
    opt.zero_grad();
    loss.backward();
    opt.step();
    last_loss = loss.item();
  }
  BOOST_TEST_MESSAGE("COPY: training loss after " << steps << " steps " << last_loss);
  std::vector<int64_t> all(data.test.size());
  std::iota(all.begin(), all.end(), 0);
  const TransductionBatch test = make_transduction_batch(data.test, all);
  const Tensor padding = eq(test.source_mask, Tensor::zeros({}, test.source_mask.dtype()));
  const Tensor decoded = greedy_decode(model, test.source, padding, Tensor::zeros({test.size()}, kInt64),
                                       {.steps = test.decoder_input.size(1)});
  const auto tokens = decoded.to_vector<int64_t>();
  int64_t solved = 0;
  for (size_t b = 0; b < data.test.size(); ++b) {
    const auto& target = data.test[b].target;
    bool same = true;
    for (size_t t = 0; t < target.size(); ++t) same = same && tokens[b * static_cast<size_t>(decoded.size(1)) + t] == target[t];
    solved += same;
    if (!same) BOOST_TEST_MESSAGE("missed word of length " << target.size());
  }
  BOOST_TEST(solved >= 30, "greedy decoding copied " << solved << " of 32 test words exactly");
}

namespace {

EncoderDecoderConfig small_config(const std::string& scheme, int64_t decoder_layers) {
  EncoderDecoderConfig c;
  c.vocab = 9;
  c.width = 16;
  c.heads = 2;
  c.ff_width = 32;
  c.encoder_layers = 1;
  c.decoder_layers = decoder_layers;
  c.max_positions = 32;
  c.positional = {scheme, {}};
  return c;
}

}  // namespace

// The decoder is causal: its states for the first t tokens do not depend on the tokens after them.
BOOST_DATA_TEST_CASE(decoder_prefix_states_equal_full_states,
                     bdata::make({"ape", "rope", "shaw", "sinusoidal", "learned_absolute", "none"}), scheme) {
  Generator gen(3);
  EncoderDecoder model(small_config(scheme, 2), gen);
  model.to(kFloat64);
  model.eval();
  const Tensor source = Tensor::from_vector<int64_t>({1, 5, 2, 7, 3, 6, 4, 4, 6, 1, 2, 3}, {1, 12});
  const Tensor padding = Tensor::zeros({1, 12});
  const Tensor tokens = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3}, {1, 11});
  const Variable memory = model.encode(source, padding);
  const Tensor full = model.decode(tokens, memory, padding).value();
  for (int64_t t : {1, 2, 5, 11}) {
    const Tensor part = model.decode(tokens.narrow(1, 0, t).contiguous(), memory, padding).value();
    expect_close(fmt::format("{} prefix {}", scheme, t), part, full.narrow(1, 0, t).contiguous(), 1e-10, 1e-8);
  }
}

// On heap positions too (tree APE, a depth-first target order): the decoder's causal mask is by
// token index, so a prefix of the tokens and of their heap positions gives the same states.
BOOST_AUTO_TEST_CASE(tree_decoder_prefix_states_equal_full_states) {
  Generator gen(3);
  EncoderDecoderConfig c = small_config("ape_tree", 2);
  c.tree_positions = true;
  EncoderDecoder model(c, gen);
  model.to(kFloat64);
  model.eval();
  const Tensor source = Tensor::from_vector<int64_t>({0, 5, 2, 7, 3, 6}, {1, 6});
  const Tensor source_heap = Tensor::from_vector<int64_t>({0, 1, 2, 3, 6, 7}, {1, 6});
  const Tensor padding = Tensor::zeros({1, 6});
  const std::vector<int64_t> heaps{0, 1, 2, 4, 5, 3, 6, 7};
  const Tensor tokens = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8});
  const Positions source_at = Positions::tree(source_heap);
  const Variable memory = model.encode(source, padding, &source_at);
  const Positions all = Positions::tree(Tensor::from_vector(heaps, {1, 8}));
  const Tensor full = model.decode(tokens, memory, padding, &all, &source_at).value();
  for (int64_t t : {1, 3, 4, 8}) {
    const Positions prefix = Positions::tree(Tensor::from_vector(std::vector<int64_t>(heaps.begin(), heaps.begin() + t), {1, t}));
    const Tensor part = model.decode(tokens.narrow(1, 0, t).contiguous(), memory, padding, &prefix, &source_at).value();
    expect_close(fmt::format("ape_tree prefix {}", t), part, full.narrow(1, 0, t).contiguous(), 1e-10, 1e-8);
  }
}

// Decoding one token at a time with the key/value caches gives the states of one decode over the
// whole sequence (the tokens of greedy decoding follow from these states).
BOOST_DATA_TEST_CASE(cached_decoder_states_equal_full_decode,
                     bdata::make({"ape", "rope", "shaw", "sinusoidal", "learned_absolute", "none"}), scheme) {
  Generator gen(3);
  EncoderDecoder model(small_config(scheme, 2), gen);
  model.to(kFloat64);
  model.eval();
  const Tensor source = Tensor::from_vector<int64_t>({1, 5, 2, 7, 3, 6, 4, 4, 6, 1, 2, 3, 2, 2, 2, 2}, {2, 8});
  const Tensor padding = Tensor::from_vector<float>({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}, {2, 8});
  const Tensor tokens = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4}, {2, 6});
  const Variable memory = model.encode(source, padding);
  const Tensor full = model.decode(tokens, memory, padding).value();
  std::vector<KeyValueCache> caches(2);
  for (int64_t t = 0; t < 6; ++t) {
    const Tensor one = model.decode(tokens.narrow(1, t, 1).contiguous(), memory, padding, nullptr, nullptr, &caches).value();
    expect_close(fmt::format("{} step {}", scheme, t), one, full.narrow(1, t, 1).contiguous(), 1e-10, 1e-8);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// The same golden files on the GPU (reported as skipped where there is none).
BOOST_AUTO_TEST_SUITE(encoder_decoder_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(matches_pytorch_on_cuda, bdata::make(kEncoderDecoderGoldenFiles), name) {
  check_golden_encoder_decoder(name, posgrad::test::kGPU);
}

// Greedy decoding on the GPU gives the CPU's tokens: sequences with the key/value cache, and trees
// (heap positions built on the host each step, tokens sent to the model's device).
BOOST_DATA_TEST_CASE(greedy_decoding_on_the_gpu_matches_the_cpu, bdata::make({false, true}), tree) {
  Generator gen(5);
  EncoderDecoder model(encoder_decoder::maps_config(tree ? "ape_tree" : "ape"), gen);
  model.to(kFloat64);
  const Tensor source = Tensor::from_vector<int64_t>({1, 5, 2, 7, 3, 6, 4, 4, 6, 1, 0, 0}, {2, 6});
  const Tensor padding = Tensor::from_vector<float>({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, {2, 6});
  const Device gpu = posgrad::test::kGPU;
  if (!tree) {
    const Tensor first = Tensor::from_vector<int64_t>({0, 3}, {2});
    const Tensor on_cpu = greedy_decode(model, source, padding, first, {.steps = 7});
    model.to(gpu);
    const Tensor on_gpu = greedy_decode(model, source.to(gpu), padding.to(gpu), first.to(gpu), {.steps = 7});
    BOOST_TEST(on_gpu.device().is_cuda());
    BOOST_TEST(on_gpu.to(kCPU).to_vector<int64_t>() == on_cpu.to_vector<int64_t>(), boost::test_tools::per_element());
    return;
  }
  const Tensor heap = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 0, 0}, {2, 6});
  const TreeGreedyDecoding options{.depth_first = true, .is_operator = [](int64_t t) { return t >= 5; }, .max_nodes = 7};
  const std::vector<DecodedTree> on_cpu = greedy_decode_tree(model, source, padding, heap, options);
  model.to(gpu);
  const std::vector<DecodedTree> on_gpu = greedy_decode_tree(model, source.to(gpu), padding.to(gpu), heap.to(gpu), options);
  BOOST_REQUIRE(on_gpu.size() == on_cpu.size());
  for (size_t b = 0; b < on_cpu.size(); ++b) {
    BOOST_TEST(on_gpu[b].labels == on_cpu[b].labels, boost::test_tools::per_element());
    BOOST_TEST(on_gpu[b].heap == on_cpu[b].heap, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_SUITE_END()

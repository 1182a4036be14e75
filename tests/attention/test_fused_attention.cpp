// The fused attention path against the reference path (the oracle): outputs, the input gradient
// and every parameter gradient, for every registered scheme and span that describes itself, on
// sequences and 2-D grids, with padded batches, causal masks and sizes that fill no block; in
// float64 (tight) and float32 (tolerance 2e-4 on values of order 1). Also a gradcheck through
// the fused op with every table, Auto's choice, the lazily computed probabilities, and the
// refusals (the escape hatch of ape_tree's decay, two probability masks); q holding only the last
// Nq of the N tokens (a segment over [cache; segment]) against the last rows of the full call,
// and gradcheck there; every case again as a segment over a memory and as cross-attention.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "attention/fused/fused_attention.h"
#include "attention/multi_head_attention.h"
#include "attention/reference_attention.h"
#include "attention/registry.h"
#include "autograd/gradcheck.h"
#include "posgrad.h"
#include "tests/attention_paths.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_runs_agree;
using posgrad::test::PathRun;
using posgrad::test::run_path;
namespace bdata = boost::unit_test::data;

namespace {

using Options = std::map<std::string, std::string>;
struct HookCase {
  std::string name;
  Options options;
};
struct FusedCase {
  std::string label;
  std::vector<HookCase> hooks;
  std::vector<int64_t> structure;  // the grid (1 entry: a sequence)
  bool causal = false;             // also run with a causal mask (sequences only)
};
std::ostream& operator<<(std::ostream& os, const FusedCase& c) { return os << c.label; }

const std::vector<FusedCase> kCases = {
    {"none", {{"none", {}}}, {11}, true},
    {"siren", {{"siren", {{"hidden", "16"}, {"layers", "2"}}}}, {11}, true},
    {"siren+gaussian_span", {{"siren", {{"hidden", "16"}}}, {"gaussian_span", {{"sigma", "0.3"}}}}, {11}, true},
    {"siren+gaussian_span positional",
     {{"siren", {{"hidden", "16"}}}, {"gaussian_span", {{"sigma", "0.25"}, {"multiply", "positional_logits"}}}},
     {11},
     false},
    {"gaussian_span alone, no box", {{"gaussian_span", {{"sigma", "0.4"}, {"threshold", "0"}}}}, {11}, true},
    {"txl_baseline", {{"txl_baseline", {{"hidden", "8"}}}}, {11}, true},
    {"transformer_xl", {{"transformer_xl", {}}}, {11}, true},
    {"shaw", {{"shaw", {{"window", "3"}}}}, {11}, true},
    {"shaw per head", {{"shaw", {{"window", "2"}, {"per_head", "true"}}}}, {11}, false},
    {"t5_bias", {{"t5_bias", {{"buckets", "8"}, {"max_distance", "16"}}}}, {11}, true},
    {"alibi", {{"alibi", {}}}, {11}, true},
    {"rope", {{"rope", {{"trainable", "true"}}}}, {11}, true},
    {"ape", {{"ape", {{"decay", "0.9"}}}}, {11}, true},
    {"local_window", {{"local_window", {{"radius", "2"}}}}, {11}, true},
    {"adaptive_span", {{"adaptive_span", {{"max_span", "6"}, {"ramp", "2"}, {"init", "0.4"}}}}, {11}, false},
    {"adaptive_span attend_self, trimmed in steps",
     {{"adaptive_span", {{"max_span", "8"}, {"ramp", "2"}, {"init", "0.3"}, {"attend_self", "true"}, {"granularity", "3"}}}},
     {11},
     false},
    {"key_pe", {{"key_pe", {{"max_span", "6"}}}}, {11}, false},
    {"key_pe+adaptive_span", {{"key_pe", {{"max_span", "8"}}}, {"adaptive_span", {{"max_span", "8"}, {"ramp", "2"}, {"init", "0.3"}}}}, {11}, false},
    {"siren+adaptive_span",
     {{"siren", {{"hidden", "16"}}}, {"adaptive_span", {{"max_span", "6"}, {"ramp", "2"}, {"init", "0.4"}}}},
     {11},
     true},
    {"t5_bias+adaptive_span",
     {{"t5_bias", {{"buckets", "8"}, {"max_distance", "16"}}}, {"adaptive_span", {{"max_span", "8"}, {"ramp", "3"}, {"init", "0.2"}}}},
     {11},
     false},
    {"dynamic_span", {{"dynamic_span", {{"max_span", "6"}, {"ramp", "2"}, {"bias_init", "0"}}}}, {11}, true},
    {"siren+dynamic_span",
     {{"siren", {{"hidden", "16"}}}, {"dynamic_span", {{"max_span", "8"}, {"ramp", "1.5"}, {"bias_init", "-1"}}}},
     {11},
     false},
    {"transformer_xl+gaussian_span+alibi",
     {{"transformer_xl", {}}, {"gaussian_span", {{"sigma", "0.2"}}}, {"alibi", {}}},
     {11},
     true},
    // Per-entry tables only (bias, modulation, positional modulation): the tiled kernels' tables.
    {"t5_bias+gaussian_span positional",
     {{"t5_bias", {{"buckets", "8"}, {"max_distance", "16"}}}, {"gaussian_span", {{"sigma", "0.3"}, {"multiply", "positional_logits"}}}},
     {11},
     true},
    {"2-D alibi+gaussian_span", {{"alibi", {}}, {"gaussian_span", {{"sigma", "0.35"}}}}, {4, 6}, false},
    {"2-D none", {{"none", {}}}, {3, 5}, false},
    {"2-D siren", {{"siren", {{"hidden", "16"}}}}, {3, 5}, false},
    {"2-D siren+gaussian_span", {{"siren", {{"hidden", "16"}}}, {"gaussian_span", {{"sigma", "0.3"}}}}, {3, 5}, false},
    {"2-D siren+gaussian_span wide", {{"siren", {{"hidden", "16"}}}, {"gaussian_span", {{"sigma", "0.15"}}}}, {6, 7}, false},
    {"2-D shaw", {{"shaw", {{"window", "1"}}}}, {3, 5}, false},
    {"2-D alibi", {{"alibi", {}}}, {3, 5}, false},
    {"2-D rope", {{"rope", {{"axes", "split"}, {"trainable", "true"}}}}, {3, 5}, false},
    {"2-D ape_grid", {{"ape_grid", {{"decay", "0.9"}}}}, {3, 5}, false},
    {"2-D local_window", {{"local_window", {{"radius", "1"}}}}, {3, 5}, false},
    // 3-D: column tables (fused_kernels.cpp) join a query's whole rows of the last dim; with the
    // span's box the leading dims clip differently per query, so blocks of a column may differ in
    // their numbers of runs.
    {"3-D siren", {{"siren", {{"hidden", "16"}}}}, {2, 3, 4}, false},
    {"3-D siren+gaussian_span", {{"siren", {{"hidden", "16"}}}, {"gaussian_span", {{"sigma", "0.3"}}}}, {3, 4, 3}, false},
    {"2-D gaussian_span positional + shaw",
     {{"shaw", {{"window", "2"}}}, {"gaussian_span", {{"sigma", "0.3"}, {"multiply", "positional_logits"}}}},
     {4, 3},
     false},
};

Positions positions_of(const std::vector<int64_t>& structure) {
  return structure.size() == 1 ? Positions::sequence(structure[0]) : Positions::grid(structure);
}

std::unique_ptr<MultiHeadAttention> make_layer(const FusedCase& c, int64_t D, int64_t H, Generator& gen) {
  std::vector<std::shared_ptr<AttentionHook>> hooks;
  for (const HookCase& h : c.hooks)
    hooks.push_back(make_hook(HookSpec{h.name, HookOptions(h.options)},
                              HookContext{.width = D, .heads = H, .structure = c.structure}, gen));
  return std::make_unique<MultiHeadAttention>(D, H, gen, hooks);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fused_path)

// Head widths 4, 8 (the thesis's) and 16: the key loops with Dh read at run time (4, 16) and
// compiled as a constant (8); the cases without a span's tables, with the Gaussian span's
// modulation, with a mask and with a positional modulation take each of the four sets of kinds
// the float32 kernels compile (with_loop_constants in fused_kernels_impl.h).
BOOST_DATA_TEST_CASE(fused_matches_reference, bdata::make(kCases), c) {
  const int64_t H = 2;
  for (const int64_t D : {8, 16, 32})
  for (const DType dtype : {kFloat64, kFloat32})
    for (const bool causal : {false, true})
      for (const bool padded : {false, true}) {
        if (causal && !c.causal) continue;
        Generator gen(7);
        auto mha = make_layer(c, D, H, gen);
        mha->to(dtype);
        const Positions pos = positions_of(c.structure);
        const int64_t N = pos.tokens(), B = 3;
        Tensor x = normal({B, N, D}, 0, 1, gen, dtype), w = normal({B, N, D}, 0, 1, gen, dtype);
        AttentionMasks masks;
        masks.causal = causal;
        if (padded) {  // example 1: its last 3 tokens padded; example 2: only the first token real
          std::vector<double> pad(static_cast<size_t>(B * N), 0.0);
          for (int64_t j = N - 3; j < N; ++j) pad[static_cast<size_t>(N + j)] = 1.0;
          for (int64_t j = 1; j < N; ++j) pad[static_cast<size_t>(2 * N + j)] = 1.0;
          masks.key_padding = Tensor::from_vector(pad, {B, N});
        }
        auto forward = [&](const Variable& xv) { return mha->forward(xv, masks, &pos); };
        PathRun ref = run_path(*mha, AttentionPath::Reference, x, w, forward);
        PathRun fused = run_path(*mha, AttentionPath::Fused, x, w, forward);
        BOOST_TEST(mha->last_forward_fused());
        const double tol = dtype == kFloat64 ? 1e-11 : 2e-4;
        const std::string label = fmt::format("{} Dh={} {}{}{}", c.label, D / H, dtype_name(dtype),
                                              causal ? " causal" : "", padded ? " padded" : "");
        check_runs_agree(*mha, ref, fused, tol, label);
        // Auto picks the fused path for every hook here.
        run_path(*mha, AttentionPath::Auto, x, w, forward);
        BOOST_TEST(mha->last_forward_fused(), label << ": Auto did not choose the fused path");
      }
}

// Without tables, or with per-entry tables only, the fused op runs its tiled kernels
// (attention/fused/tiled_kernels.h: blocks of 32 to 64 queries on the GEMM, over the union of the
// keys their runs cover) where the bands pay; the "none" and "local_window" cases above are one
// block. Here 600 queries make several blocks, the last one short, with padded keys: every key, a
// causal mask, a window of 41 keys (blocks of 64 queries), cross-attention (300 queries over the
// 600 keys), and on a 20 x 30 grid a 7 x 7 box and the Gaussian span's box with its modulation
// (bands of several parts, one per row of keys, whose rows are gathered), float64 and float32.
BOOST_AUTO_TEST_CASE(tiled_kernels_in_several_blocks_match_reference) {
  const int64_t H = 2, D = 32, B = 2, N = 600;  // Dh 16: the tiled kernels take heads of 16 or more
  for (const DType dtype : {kFloat64, kFloat32})
    for (const std::string kind : {"all keys", "causal", "window", "cross", "2-D box", "2-D gaussian_span"}) {
      const int64_t Nq = kind == "cross" ? N / 2 : N;
      const bool grid = kind.starts_with("2-D");
      const HookCase hook = kind == "window"              ? HookCase{"local_window", {{"radius", "20"}}}
                            : kind == "2-D box"           ? HookCase{"local_window", {{"radius", "3"}}}
                            : kind == "2-D gaussian_span" ? HookCase{"gaussian_span", {{"sigma", "0.12"}}}
                                                          : HookCase{"none", {}};
      const FusedCase c{kind, {hook}, grid ? std::vector<int64_t>{20, 30} : std::vector<int64_t>{N}, false};
      Generator gen(5);
      auto mha = make_layer(c, D, H, gen);
      mha->to(dtype);
      const Positions keys = grid ? Positions::grid({20, 30}) : Positions::sequence(N);
      const PositionPair pair(grid ? keys : Positions::sequence(Nq), keys);
      Tensor x = normal({B, Nq + N, D}, 0, 1, gen, dtype), w = normal({B, Nq, D}, 0, 1, gen, dtype);
      std::vector<double> pad(static_cast<size_t>(B * N), 0.0);
      for (int64_t j = 1; j < N; j += 3) pad[static_cast<size_t>(N + j)] = 1.0;  // example 1: every third key padded
      const Tensor padding = Tensor::from_vector(pad, {B, N});
      auto forward = [&](const Variable& xv) {
        return mha->forward(narrow(xv, 1, 0, Nq), narrow(xv, 1, Nq, N),
                            AttentionContext{&pair, padding, kind == "causal", nullptr});
      };
      PathRun ref = run_path(*mha, AttentionPath::Reference, x, w, forward);
      PathRun fused = run_path(*mha, AttentionPath::Fused, x, w, forward);
      BOOST_TEST(mha->last_forward_fused());
      check_runs_agree(*mha, ref, fused, dtype == kFloat64 ? 1e-11 : 2e-4, fmt::format("tiled {} {}", kind, dtype_name(dtype)));
    }
}

// Queries with their own positions, for every case above: a segment over a memory (sequences: the
// last 4 tokens' queries over all keys, PositionPair::memory) and cross-attention (queries on a
// grid of their own, smaller or larger than the keys' per dim, keys padded): fused against the
// reference in float64 at head widths 4, 8 and 16, the output, both inputs' gradients and every
// parameter's.
BOOST_DATA_TEST_CASE(fused_matches_reference_for_memory_and_cross_attention, bdata::make(kCases), c) {
  const int64_t H = 2, B = 2;
  const Positions keys = positions_of(c.structure);
  std::vector<int64_t> query_structure = c.structure;
  for (size_t d = 0; d < query_structure.size(); ++d) query_structure[d] += d % 2 == 0 ? -1 : 1;
  std::vector<std::pair<std::string, PositionPair>> pairs = {{"cross", PositionPair(positions_of(query_structure), keys)}};
  if (c.structure.size() == 1) pairs.emplace_back("memory", PositionPair::memory(keys.tokens(), 4));
  for (const auto& [kind, pair] : pairs)
    for (const int64_t D : {8, 16, 32})
      for (const bool causal : {false, true}) {
        if (causal && (!c.causal || kind == "cross")) continue;
        Generator gen(7);
        auto mha = make_layer(c, D, H, gen);
        mha->to(kFloat64);
        const int64_t Nq = pair.queries().tokens(), Nk = pair.keys().tokens();
        const bool memory = kind == "memory";
        // One input holds both sides (the memory's queries are its last rows), so dx covers both.
        const int64_t rows = memory ? Nk : Nq + Nk;
        Tensor x = normal({B, rows, D}, 0, 1, gen, kFloat64), w = normal({B, Nq, D}, 0, 1, gen, kFloat64);
        std::vector<double> pad(static_cast<size_t>(B * Nk), 0.0);
        pad[static_cast<size_t>(Nk + 1)] = pad[static_cast<size_t>(2 * Nk - 1)] = 1.0;  // example 1: two keys padded
        const Tensor padding = Tensor::from_vector(pad, {B, Nk});
        auto forward = [&](const Variable& xv) {
          const Variable from_keys = memory ? xv : narrow(xv, 1, Nq, Nk);
          const Variable from_queries = memory ? narrow(xv, 1, Nk - Nq, Nq) : narrow(xv, 1, 0, Nq);
          return mha->forward(from_queries, from_keys, AttentionContext{&pair, padding, causal, nullptr});
        };
        PathRun ref = run_path(*mha, AttentionPath::Reference, x, w, forward);
        PathRun fused = run_path(*mha, AttentionPath::Fused, x, w, forward);
        BOOST_TEST(mha->last_forward_fused());
        check_runs_agree(*mha, ref, fused, 1e-11,
                         fmt::format("{} {} ({}) Dh={}{}", c.label, kind, pair.describe(), D / H, causal ? " causal" : ""));
      }
}

// The probabilities a fused forward reports (the reference's, computed on request from the
// forward's saved inputs and tables) are those of a reference forward, with a mask (adaptive
// span) and without.
BOOST_AUTO_TEST_CASE(fused_probabilities_match_reference) {
  const std::vector<FusedCase> cases = {
      {"siren+adaptive", {{"siren", {{"hidden", "8"}}}, {"adaptive_span", {{"max_span", "5"}, {"ramp", "2"}, {"init", "0.3"}}}}, {9}, false},
      {"siren+gaussian_span", {{"siren", {{"hidden", "8"}}}, {"gaussian_span", {{"sigma", "0.3"}}}}, {9}, false}};
  for (const FusedCase& c : cases)
    for (const int64_t D : {8, 16}) {
      Generator gen(3);
      auto mha = make_layer(c, D, 2, gen);
      mha->to(kFloat64);
      const Positions pos = Positions::sequence(9);
      Tensor x = normal({2, 9, D}, 0, 1, gen, kFloat64);
      mha->set_path(AttentionPath::Reference);
      mha->forward(Variable(x), {}, &pos);
      const Tensor ref = mha->last_probs();
      mha->set_path(AttentionPath::Fused);
      mha->forward(Variable(x), {}, &pos);
      BOOST_TEST(mha->last_forward_fused());
      const Tensor fused = mha->last_probs();
      BOOST_TEST(max_abs_diff(ref, fused) < 1e-12, c.label << " D=" << D);
      BOOST_TEST((mha->last_probs().shape() == Shape{2, 2, 9, 9}));
    }
}

// Central differences through the op itself, with every table present, a key box and padding;
// Dh = 3 and the thesis's Dh = 8 (Dh read at run time and compiled as a constant).
BOOST_AUTO_TEST_CASE(gradcheck_through_the_fused_op) {
  for (const int64_t Dh : {3, 8})
  for (const std::vector<int64_t>& structure : {std::vector<int64_t>{7}, std::vector<int64_t>{3, 4}}) {
    Generator gen(11);
    const Positions pos = positions_of(structure);
    const int64_t B = 2, H = 2, N = pos.tokens(), R = PositionPair(pos).relative_size();
    AttentionSpec spec;
    spec.positions = pos;
    spec.scale = 0.6;
    OffsetBox box = OffsetBox::full(pos);
    box.lo[0] = -2;  // keys at most 2 before (first dim) and any after
    spec.box = box;
    std::vector<double> pad(static_cast<size_t>(B * N), 0.0);
    pad[static_cast<size_t>(N + 1)] = 1.0;
    spec.key_padding = Tensor::from_vector(pad, {B, N});
    std::vector<Tensor> inputs = {normal({B, H, N, Dh}, 0, 1, gen, kFloat64), normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                                  normal({B, H, N, Dh}, 0, 1, gen, kFloat64), normal({H, Dh}, 0, 1, gen, kFloat64),
                                  normal({H, R, Dh}, 0, 0.5, gen, kFloat64), normal({H, R}, 0, 1, gen, kFloat64),
                                  uniform({R}, 0.5, 1.5, gen, kFloat64), uniform({H, R}, 0.5, 1.5, gen, kFloat64),
                                  uniform({H, R}, 0.1, 1.0, gen, kFloat64)};
    auto fn = [&](const std::vector<Variable>& v) {
      AttentionTerms terms;
      terms.key_bias = v[3];
      terms.query_table = v[4];
      terms.bias = v[5];
      terms.modulation = v[6];
      terms.positional_modulation = v[7];
      terms.prob_mask = v[8];
      return posgrad::fused_attention(v[0], v[1], v[2], terms, spec);
    };
    const GradcheckResult r = gradcheck(fn, inputs);
    BOOST_TEST(r.ok, "fused gradcheck " << structure.size() << "-D Dh=" << Dh << ": " << r.message);
  }
}

// Every kind of table of kTableKinds (attention_terms.h), merged into terms holding only a
// positional bias: the fused op agrees with the reference (the output and the gradients of q, k,
// v and the table, float64), and the table changes the output of both (each implementation reads
// it), on a sequence and on a grid with column tables.
BOOST_AUTO_TEST_CASE(every_table_kind_acts_alike_in_both_implementations) {
  for (const std::vector<int64_t>& structure : {std::vector<int64_t>{7}, std::vector<int64_t>{3, 4}})
  for (const TableKind& kind : kTableKinds) {
    if (kind.shape == TableShape::RowWindow && structure.size() != 1) continue;  // 1-D only (test_dynamic_span)
    Generator gen(17);
    const Positions pos = positions_of(structure);
    const int64_t B = 2, H = 2, N = pos.tokens(), R = PositionPair(pos).relative_size(), Dh = 3;
    AttentionSpec spec;
    spec.positions = pos;
    spec.scale = 0.6;
    const Shape table_shape = kind.shape == TableShape::HeadVector ? Shape{H, Dh}
                              : kind.shape == TableShape::Entries ? Shape{H, R}
                              : kind.shape == TableShape::RowWindow ? Shape{B, H, N, 5}  // offsets -4 .. 0
                                                                   : Shape{H, R, Dh};
    const Tensor table = kind.merge == TableMerge::Add ? normal(table_shape, 0, 1, gen, kFloat64)
                                                       : uniform(table_shape, 0.2, 1.5, gen, kFloat64);
    const std::vector<Tensor> qkv = {normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                                     normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                                     normal({B, H, N, Dh}, 0, 1, gen, kFloat64)};
    const Tensor weights = normal({B, H, N, Dh}, 0, 1, gen, kFloat64);
    const Tensor context_bias = normal({H, R}, 0, 1, gen, kFloat64);
    struct Run {
      Tensor out;
      std::vector<Tensor> grads;  // q, k, v, table
    };
    auto run = [&](bool fused, bool with_table) {
      std::vector<Variable> v;
      for (const Tensor& t : qkv) v.emplace_back(t.clone(), true);
      v.emplace_back(table.clone(), true);
      AttentionTerms terms;
      terms.bias = Variable(context_bias);  // a positional term for positional_modulation to scale
      if (with_table) {
        AttentionTerms part;
        part.*kind.member = v[3];
        merge_terms(terms, part, "probe");
      }
      const Variable out = fused ? posgrad::fused_attention(v[0], v[1], v[2], terms, spec)
                                 : reference_attention(v[0], v[1], v[2], terms, spec);
      sum(out * Variable(weights), {}).backward();
      Run r{out.value(), {}};
      for (const Variable& x : v) r.grads.push_back(x.grad());
      return r;
    };
    const std::string label = fmt::format("{} on {}", kind.name, pos.describe());
    const Run reference = run(false, true), fused = run(true, true);
    posgrad::test::expect_close(label + ": outputs", fused.out, reference.out, 1e-12, 1e-10);
    for (size_t i = 0; i < 4; ++i)
      posgrad::test::expect_close(fmt::format("{}: gradient {}", label, i), fused.grads[i], reference.grads[i], 1e-12,
                                  1e-10);
    const double reference_change = max_abs_diff(reference.out, run(false, false).out);
    const double fused_change = max_abs_diff(fused.out, run(true, false).out);
    BOOST_TEST(reference_change > 1e-6, label << ": the reference ignores the table");
    BOOST_TEST(fused_change > 1e-6, label << ": the fused op ignores the table");
  }
}

// A segment over a memory (PositionPair::memory: the queries are the last Nq of N tokens): the
// same outputs as the last Nq rows of the self-attention call, dq the same rows, dk, dv and every
// table gradient the ones that the last rows' loss gives (its relative grid is the first
// N + Nq - 1 entries of the self-attention one); and gradcheck through it.
BOOST_AUTO_TEST_CASE(queries_are_the_last_tokens) {
  Generator gen(13);
  const int64_t B = 2, H = 2, N = 9, Nq = 4, Dh = 3, R = 2 * N - 1;
  AttentionSpec full_spec, last_spec;
  full_spec.positions = Positions::sequence(N);
  last_spec.positions = PositionPair::memory(N, Nq);
  BOOST_TEST(last_spec.positions.relative_size() == N + Nq - 1);
  for (AttentionSpec* spec : {&full_spec, &last_spec}) {
    spec->scale = 0.6;
    spec->box = OffsetBox{{-5}, {-1}};  // the 5 keys before each query
  }
  std::vector<Tensor> inputs = {normal({B, H, N, Dh}, 0, 1, gen, kFloat64), normal({B, H, N, Dh}, 0, 1, gen, kFloat64),
                                normal({B, H, N, Dh}, 0, 1, gen, kFloat64), normal({H, Dh}, 0, 1, gen, kFloat64),
                                normal({H, R, Dh}, 0, 0.5, gen, kFloat64), normal({H, R}, 0, 1, gen, kFloat64),
                                uniform({H, R}, 0.1, 1.0, gen, kFloat64)};
  auto call = [&](const std::vector<Variable>& v, const Variable& q, const AttentionSpec& spec) {
    const int64_t entries = spec.positions.relative_size();
    AttentionTerms terms;
    terms.key_bias = v[3];
    terms.query_table = narrow(v[4], 1, 0, entries);
    terms.bias = narrow(v[5], 1, 0, entries);
    terms.prob_mask = narrow(v[6], 1, 0, entries);
    return posgrad::fused_attention(q, v[1], v[2], terms, spec);
  };
  const Tensor weights = normal({B, H, Nq, Dh}, 0, 1, gen, kFloat64);
  std::vector<Variable> full_vars, last_vars;
  for (const Tensor& t : inputs) {
    full_vars.emplace_back(t.clone(), true);
    last_vars.emplace_back(t.clone(), true);
  }
  const Variable full = narrow(call(full_vars, full_vars[0], full_spec), 2, N - Nq, Nq);
  const Variable last = call(last_vars, narrow(last_vars[0], 2, N - Nq, Nq), last_spec);
  BOOST_REQUIRE(last.value().shape() == (Shape{B, H, Nq, Dh}));
  posgrad::test::expect_close("outputs", last.value(), full.value(), 1e-14, 1e-12);
  sum(full * Variable(weights), {}).backward();
  sum(last * Variable(weights), {}).backward();
  for (size_t i = 0; i < inputs.size(); ++i)
    posgrad::test::expect_close(fmt::format("grad {}", i), last_vars[i].grad(), full_vars[i].grad(), 1e-13, 1e-11);
  inputs[0] = inputs[0].narrow(2, N - Nq, Nq).contiguous();
  const GradcheckResult r = gradcheck([&](const std::vector<Variable>& v) { return call(v, v[0], last_spec); }, inputs);
  BOOST_TEST(r.ok, "fused gradcheck with the last queries: " << r.message);
  // Queries that the positions do not describe are an error naming both.
  posgrad::test::check_error([&] {
    posgrad::fused_attention(Variable(normal({B, H, N + 1, Dh}, 0, 1, gen, kFloat64)), Variable(inputs[1]),
                             Variable(inputs[2]), AttentionTerms{}, last_spec);
  }, {"10 queries and 9 keys", "positions describe"});
}

BOOST_AUTO_TEST_CASE(fused_path_refuses_what_it_cannot_describe) {
  Generator gen(5);
  // ape_tree with its decay: a per-example [B, N, N] factor.
  auto tree_hook = make_hook(HookSpec{"ape_tree", HookOptions()}, HookContext{.width = 8, .heads = 2}, gen);
  MultiHeadAttention tree(8, 2, gen, {tree_hook});
  const Positions heap = Positions::tree(Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {4}));
  Tensor x = normal({1, 4, 8}, 0, 1, gen);
  tree.set_path(AttentionPath::Fused);
  posgrad::test::check_error([&] { tree.forward(Variable(x), {}, &heap); }, {"ape_tree", "fused attention path cannot run", "not a table over the relative grid"});
  tree.set_path(AttentionPath::Auto);  // Auto takes the reference path
  tree.forward(Variable(x), {}, &heap);
  BOOST_TEST(!tree.last_forward_fused());
  // Two probability masks cannot be one table (on either path).
  const FusedCase two{"two masks", {{"adaptive_span", {{"max_span", "3"}}}, {"adaptive_span", {{"max_span", "3"}}}}, {4}, false};
  auto mha = make_layer(two, 8, 2, gen);
  mha->set_path(AttentionPath::Fused);
  const Positions seq = Positions::sequence(4);
  posgrad::test::check_error([&] { mha->forward(Variable(x), {}, &seq); }, {"both mask probabilities"});
  BOOST_TEST((attention_path_from_name("fused") == AttentionPath::Fused));
}

// The share of scores a forward computed: on the fused path, the query-key pairs inside the
// span's box (counted here pair by pair), or, where the box is at least as wide as the grid's
// last dim, the pairs of its rows widened to the whole last dim (column tables); on the reference
// path all of them.
BOOST_AUTO_TEST_CASE(computed_share_counts_the_box_pairs) {
  struct ShareCase {
    std::vector<int64_t> structure;
    std::string sigma;
    bool widened;  // the box spans at least the last dim's size: whole rows are computed
  };
  for (const ShareCase& sc : {ShareCase{{5, 7}, "0.2", true}, ShareCase{{5, 9}, "0.1", false}}) {
    Generator gen(5);
    const int64_t S0 = sc.structure[0], S1 = sc.structure[1], N = S0 * S1;
    const FusedCase c{"siren+gaussian_span", {{"siren", {{"hidden", "8"}}}, {"gaussian_span", {{"sigma", sc.sigma}}}},
                      sc.structure, false};
    auto mha = make_layer(c, 8, 2, gen);
    const Positions pos = Positions::grid(sc.structure);
    const OffsetBox box = *mha->hooks().back()->key_range(pos);
    BOOST_TEST((box.hi[1] - box.lo[1] + 1 >= S1) == sc.widened, "the case's box is not what it says");
    int64_t inside = 0, computed = 0;
    for (int64_t qy = 0; qy < S0; ++qy)
      for (int64_t qx = 0; qx < S1; ++qx)
        for (int64_t ky = 0; ky < S0; ++ky)
          for (int64_t kx = 0; kx < S1; ++kx) {
            inside += box.contains({ky - qy, kx - qx}) ? 1 : 0;
            computed += (sc.widened ? box.contains({ky - qy, 0}) : box.contains({ky - qy, kx - qx})) ? 1 : 0;
          }
    BOOST_TEST(inside < N * N);  // the box clips: the test means something
    BOOST_TEST(box.pairs(sc.structure) == static_cast<double>(inside));
    const Tensor x = normal({1, N, 8}, 0, 1, gen);
    mha->set_path(AttentionPath::Fused);
    mha->forward(Variable(x), {}, &pos);
    BOOST_TEST(mha->last_computed_share(pos) == static_cast<double>(computed) / static_cast<double>(N * N));
    mha->set_path(AttentionPath::Reference);
    mha->forward(Variable(x), {}, &pos);
    BOOST_TEST(mha->last_computed_share(pos) == 1.0);
  }
}

BOOST_AUTO_TEST_SUITE_END()

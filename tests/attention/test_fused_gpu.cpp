// The GPU fused attention kernels (attention/fused/gpu/) against the reference path: outputs and
// the gradients of q, k, v and every table they take, on sequences, 2-D and 3-D grids and tree
// positions, for self-attention, a segment over a memory and cross-attention, with key boxes and
// padded keys, and masks per query row. On every machine their arithmetic runs on the CPU, one GPU thread after another
// (fused_attention_gpu_emulation), in float64 to 1e-12; where a GPU is present the same cases run
// on it (float64 and float32), and a layer on a GPU shows which path auto and fused take.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "attention/fused/fused_attention.h"
#include "attention/fused/gpu/fused_gpu.h"
#include "attention/multi_head_attention.h"
#include "attention/reference_attention.h"
#include "posgrad.h"
#include "tests/device_support.h"
#include "tests/golden_compare.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

struct GpuCase {
  std::string label;
  std::vector<int64_t> key_grid, query_grid;  // empty query_grid: self-attention; key_grid {}: tree
  int64_t memory_queries = 0;                 // > 0: the last Nq of a sequence's N tokens
  std::vector<int64_t> box_lo, box_hi;        // empty: every key
  std::vector<std::string> tables;            // kinds by name; "all": every kind the GPU kernels take
};
std::ostream& operator<<(std::ostream& os, const GpuCase& c) { return os << c.label; }

const std::vector<GpuCase> kGpuCases = {
    {"1-D, no table", {9}, {}, 0, {}, {}, {}},
    {"1-D, every table", {9}, {}, 0, {}, {}, {"all"}},
    {"1-D, query table in a window", {11}, {}, 0, {-3}, {2}, {"query_table"}},
    {"1-D, causal, bias and modulation", {10}, {}, 0, {-9}, {0}, {"bias", "modulation"}},
    {"1-D, a memory, every table, causal", {10}, {}, 4, {-9}, {0}, {"all"}},
    {"1-D cross-attention, every table", {8}, {5}, 0, {}, {}, {"all"}},
    {"2-D, every table", {3, 4}, {}, 0, {}, {}, {"all"}},
    {"2-D, a box, query table and mask", {4, 5}, {}, 0, {-1, -2}, {2, 1}, {"query_table", "prob_mask"}},
    {"2-D cross-attention, positional modulation", {3, 5}, {2, 6}, 0, {}, {}, {"query_table", "positional_modulation"}},
    {"3-D, a box, every table", {2, 3, 3}, {}, 0, {-1, -1, -1}, {1, 0, 2}, {"all"}},
    {"tree positions, key bias", {}, {}, 0, {}, {}, {"key_bias"}},
    // A mask per query row (the adaptive span): 1-D, over each row's support only.
    {"1-D, row mask", {9}, {}, 0, {}, {}, {"row_prob_mask"}},
    {"1-D, a memory, row mask, query table and key bias (charlm)", {10}, {}, 4, {-4}, {0},
     {"row_prob_mask", "query_table", "key_bias"}},
    {"1-D, causal, row mask and modulation", {8}, {}, 0, {-7}, {0}, {"row_prob_mask", "modulation", "bias"}},
};

PositionPair pair_of(const GpuCase& c) {
  if (c.key_grid.empty()) {  // a complete binary tree of 7 nodes in heap order
    const Positions tree = Positions::tree(Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7}, {7}), 2);
    return PositionPair(tree);
  }
  const auto positions = [](const std::vector<int64_t>& s) {
    return s.size() == 1 ? Positions::sequence(s[0]) : Positions::grid(s);
  };
  if (c.memory_queries > 0) return PositionPair::memory(c.key_grid[0], c.memory_queries);
  if (!c.query_grid.empty()) return PositionPair(positions(c.query_grid), positions(c.key_grid));
  return PositionPair(positions(c.key_grid));
}

bool wants(const GpuCase& c, std::string_view kind) {
  for (const std::string& t : c.tables)
    if ((t == "all" && kind != "row_prob_mask") || t == kind) return true;  // one probability mask at a time
  return false;
}

// One call's inputs (q, k, v and the case's tables, as leaves) and what it gives back.
struct Inputs {
  AttentionSpec spec;
  std::vector<Tensor> values;  // q, k, v, then the tables in kTableKinds order of those present
  std::vector<std::string> names;
  Tensor weights;              // the loss is sum(out * weights)
};

Inputs make_inputs(const GpuCase& c, DType dtype) {
  Generator gen(23);
  Inputs in;
  in.spec.positions = pair_of(c);
  in.spec.scale = 0.7;
  if (!c.box_lo.empty()) in.spec.box = OffsetBox{c.box_lo, c.box_hi};
  const int64_t B = 3, H = 2, Dh = 3, Nq = in.spec.positions.queries().tokens(), N = in.spec.positions.keys().tokens();
  const int64_t R = c.key_grid.empty() ? 0 : in.spec.positions.relative_size();
  std::vector<double> pad(static_cast<size_t>(B * N), 0.0);  // example 1: its last key; example 2: all but its first
  pad[static_cast<size_t>(2 * N - 1)] = 1.0;
  for (int64_t j = 1; j < N; ++j) pad[static_cast<size_t>(2 * N + j)] = 1.0;
  in.spec.key_padding = Tensor::from_vector(pad, {B, N});
  in.values = {normal({B, H, Nq, Dh}, 0, 1, gen, dtype), normal({B, H, N, Dh}, 0, 1, gen, dtype),
               normal({B, H, N, Dh}, 0, 1, gen, dtype)};
  in.names = {"q", "k", "v"};
  for (size_t index = 0; index < kTableKindCount; ++index) {
    const TableKind& kind = kTableKinds[index];
    if (!wants(c, kind.name)) continue;
    Generator table_gen(100 + index);  // a kind's values do not depend on which other kinds are present
    if (kind.shape == TableShape::RowWindow) {  // offsets -4 .. 0, rows cut to supports of every kind
      const int64_t W = 5;
      std::vector<double> m = uniform({B, H, Nq, W}, 0.2, 1.5, table_gen, kFloat64).to_vector<double>();
      for (int64_t row = 0; row < B * H * Nq; ++row) {
        double* r = m.data() + row * W;
        if (row % 3 == 1) r[0] = r[W - 1] = 0;  // a support of the middle columns
        if (row % 5 == 2) r[1] = 0;             // a zero inside the support
        if (row % 7 == 3) std::fill(r, r + W, 0.0);  // no support: the row sees no key
      }
      in.values.push_back(Tensor::from_vector(m, {B, H, Nq, W}).to(dtype));
      in.names.emplace_back(kind.name);
      continue;
    }
    const Shape shape = kind.shape == TableShape::HeadVector ? Shape{H, Dh}
                        : kind.shape == TableShape::Entries  ? Shape{H, R}
                                                             : Shape{H, R, Dh};
    in.values.push_back(kind.merge == TableMerge::Add ? normal(shape, 0, 1, table_gen, dtype)
                                                      : uniform(shape, 0.2, 1.5, table_gen, dtype));
    in.names.emplace_back(kind.name);
  }
  in.weights = normal({B, H, Nq, Dh}, 0, 1, gen, dtype);
  return in;
}

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // as Inputs::values
};

enum class Impl { Reference, Emulation, Gpu };

// parts: the emulation's parts per row.
Result run(const Inputs& in, Impl impl, int64_t parts = 3) {
  const Device device = impl == Impl::Gpu ? test::kGPU : kCPU;
  std::vector<Variable> leaves;
  for (const Tensor& t : in.values) leaves.emplace_back(t.to(device).clone(), true);
  AttentionTerms terms;
  for (size_t i = 3; i < leaves.size(); ++i)
    for (const TableKind& kind : kTableKinds)
      if (kind.name == in.names[i]) terms.*kind.member = leaves[i];
  AttentionSpec spec = in.spec;
  spec.key_padding = in.spec.key_padding.to(device);
  const Variable out = impl == Impl::Reference   ? reference_attention(leaves[0], leaves[1], leaves[2], terms, spec)
                       : impl == Impl::Emulation ? fused_attention_gpu_emulation(leaves[0], leaves[1], leaves[2], terms, spec, parts)
                                                 : fused_attention(leaves[0], leaves[1], leaves[2], terms, spec);
  sum(out * Variable(in.weights.to(device)), {}).backward();
  Result r{out.value().to(kCPU), {}};
  for (const Variable& leaf : leaves) r.grads.push_back(leaf.grad().to(kCPU));
  return r;
}

void expect_agree(const std::string& label, const Inputs& in, const Result& got, const Result& want, double atol,
                  double rtol) {
  test::expect_close(label + ": output", got.out, want.out, atol, rtol);
  for (size_t i = 0; i < want.grads.size(); ++i)
    test::expect_close(label + ": gradient of " + in.names[i], got.grads[i], want.grads[i], atol, rtol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fused_gpu_kernels)

// The kernels' arithmetic on the CPU: the same numbers as the reference, float64, with every row
// in one part, in 3, and in 40 (more parts than most rows have keys: parts without any).
BOOST_DATA_TEST_CASE(emulated_kernels_match_reference, bdata::make(kGpuCases), c) {
  const Inputs in = make_inputs(c, kFloat64);
  const Result reference = run(in, Impl::Reference);
  for (const int64_t parts : {1, 3, 40})
    expect_agree(fmt::format("{} (emulated, {} parts)", c.label, parts), in, run(in, Impl::Emulation, parts), reference,
                 1e-12, 1e-10);
}

// Every kind of kTableKinds (attention_terms.h), beside a bias: the kernels' arithmetic agrees with
// the reference, and the kind changes their result (none is ignored).
BOOST_AUTO_TEST_CASE(every_kind_the_kernels_take_acts) {
  for (const TableKind& table_kind : kTableKinds) {
    const std::string kind(table_kind.name);
    // A bias beside every other kind: a positional term for positional_modulation to scale.
    const std::vector<std::string> base = kind == "bias" ? std::vector<std::string>{} : std::vector<std::string>{"bias"};
    std::vector<std::string> tables = base;
    tables.push_back(kind);
    const std::vector<int64_t> grid =
        table_kind.shape == TableShape::RowWindow ? std::vector<int64_t>{7} : std::vector<int64_t>{3, 4};  // 1-D only
    const GpuCase with{kind, grid, {}, 0, {}, {}, tables}, without{kind, grid, {}, 0, {}, {}, base};
    const Inputs a = make_inputs(with, kFloat64), b = make_inputs(without, kFloat64);
    expect_agree(kind + " beside a bias (emulated)", a, run(a, Impl::Emulation), run(a, Impl::Reference), 1e-12, 1e-10);
    BOOST_TEST(max_abs_diff(run(a, Impl::Emulation).out, run(b, Impl::Emulation).out) > 1e-6, kind << " is ignored");
  }
}

// The parts per row fill a GPU (about 2^18 threads) with parts of at least 32 items: the key
// box, not the sequence, bounds a row's work.
BOOST_AUTO_TEST_CASE(parts_follow_the_rows_and_the_box) {
  fused_gpu::Problem<double> pb;
  pb.B = 1, pb.H = 1, pb.Nq = 4096, pb.N = 4096, pb.Dh = 8;
  const fused_gpu::Where on_a_gpu{};
  BOOST_TEST(fused_gpu::Parts::plan(pb, on_a_gpu).rows == 64);  // no grid (trees): 4,096 rows x 64 = 2^18
  pb.geometry.dims = 1;
  pb.geometry.key_size[0] = pb.geometry.query_size[0] = 4096;
  pb.geometry.lo[0] = -32, pb.geometry.hi[0] = 31;  // 64 keys a row: two parts of 32
  pb.R = 8191;
  const fused_gpu::Parts parts = fused_gpu::Parts::plan(pb, on_a_gpu);
  BOOST_TEST(parts.rows == 2);
  BOOST_TEST(parts.keys == 2);
  BOOST_TEST(parts.entries == 33);  // 8,191 entries of up to 4,096 pairs: ceil(2^18 / 8,191)
  pb.B = 64, pb.H = 8;  // 2^21 rows: one part each
  BOOST_TEST(fused_gpu::Parts::plan(pb, on_a_gpu).rows == 1);
  BOOST_TEST(fused_gpu::Parts::plan(pb, fused_gpu::Where{true, 0, 5}).rows == 5);  // the tests' choice
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fused_gpu_kernels_on_a_gpu, *boost::unit_test::precondition(test::GpuPresent()))

BOOST_DATA_TEST_CASE(gpu_kernels_match_reference, bdata::make(kGpuCases), c) {
  const Inputs in64 = make_inputs(c, kFloat64);
  expect_agree(c.label + " (GPU, float64)", in64, run(in64, Impl::Gpu), run(in64, Impl::Reference), 1e-11, 1e-9);
  const Inputs in32 = make_inputs(c, kFloat32);
  expect_agree(c.label + " (GPU, float32)", in32, run(in32, Impl::Gpu), run(in32, Impl::Reference), 2e-5, 2e-4);
}

// On a GPU auto keeps the reference path; the fused path runs the GPU kernels, with the same result.
BOOST_AUTO_TEST_CASE(auto_takes_the_reference_and_fused_the_gpu_kernels) {
  Generator gen(3);
  MultiHeadAttention mha(8, 2, gen, {});
  mha.to(kFloat64);
  mha.to(test::kGPU);
  const Positions pos = Positions::sequence(6);
  const Variable x(normal({2, 6, 8}, 0, 1, gen, kFloat64).to(test::kGPU));
  mha.set_path(AttentionPath::Auto);
  const Tensor by_reference = mha.forward(x, AttentionMasks{}, &pos).value().to(kCPU);
  BOOST_TEST(!mha.last_forward_fused());
  mha.set_path(AttentionPath::Fused);
  const Tensor by_kernels = mha.forward(x, AttentionMasks{}, &pos).value().to(kCPU);
  BOOST_TEST(mha.last_forward_fused());
  test::expect_close("fused on the GPU", by_kernels, by_reference, 1e-11, 1e-9);
}

BOOST_AUTO_TEST_SUITE_END()

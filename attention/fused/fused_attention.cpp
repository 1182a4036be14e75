// fused_attention (see fused_attention.h): argument checks, the tables
// brought to the kernels' layouts ([H, R], [H, Dh, R]) by differentiable ops, and the autograd
// record around the kernels of fused_kernels.cpp.
// Shapes: letters of shape_legend.h.
#include "attention/fused/fused_attention.h"

#include <fmt/format.h>

#include "attention/fused/fused_kernels.h"
#include "attention/fused/gpu/fused_gpu.h"
#include "attention/attention_masks.h"

namespace posgrad {

namespace {

using fused_detail::Problem;
using fused_detail::RowGeometry;

// The tables as the kernels read them (kernel_table_layout: contiguous, per head), per kind of
// kTableKinds; undefined = absent.
using KernelTables = std::array<Variable, kTableKindCount>;

// A hook's table of kind `kind` -> the kernels' layout, or an Error naming the shape it must have.
Variable kernel_table(const TableKind& kind, const Variable& t, const Problem& P, DType dtype, Device device) {
  const int64_t H = P.H, R = P.R, Dh = P.Dh;
  if (t.value().device() != device)
    fail("fused attention: table {} must be on q's device {}, got {}", kind.name, device.str(), t.value().describe());
  if (t.dtype() != dtype)
    fail("fused attention: table {} is {} but q is {}; convert the hook with to()", kind.name, t.value().describe(),
         dtype_name(dtype));
  switch (kind.shape) {
    case TableShape::HeadVector:
      if (t.dim() == 2 && t.size(0) == H && t.size(1) == Dh) return contiguous(t);
      fail("fused attention: {} must be [H, Dh] = [{}, {}], got {}", kind.name, H, Dh, t.value().describe());
    case TableShape::Entries:  // [R] or [H, R] -> contiguous [H, R]
      if (t.dim() == 1 && t.size(0) == R) return contiguous(expand(unsqueeze(t, 0), {H, R}));
      if (t.dim() == 2 && t.size(0) == H && t.size(1) == R) return contiguous(t);
      fail("fused attention: table {} must be [R] or [H, R] = [{}, {}], got {}", kind.name, H, R, t.value().describe());
    case TableShape::EntryVectors:  // [H, R, Dh] -> [H, Dh, R]
      if (t.dim() == 3 && t.size(0) == H && t.size(1) == R && t.size(2) == Dh) return contiguous(transpose(t, 1, 2));
      fail("fused attention: {} must be [H, R, Dh] = [{}, {}, {}], got {}", kind.name, H, R, Dh, t.value().describe());
    case TableShape::RowWindow:  // [B, H, Nq, W], one row per query
      if (t.dim() == 4 && t.size(0) == P.B && t.size(1) == H && t.size(2) == P.Nq && t.size(3) >= 1) return contiguous(t);
      fail("fused attention: {} must be [B, H, Nq, W] = [{}, {}, {}, W], got {}", kind.name, P.B, H, P.Nq,
           t.value().describe());
  }
  return t;
}

// Also sets P.W from a row window table (and checks its positions: 1-D sequences only).
KernelTables kernel_tables(const AttentionTerms& terms, Problem& P, const PositionPair& positions, DType dtype,
                           Device device) {
  KernelTables kt;
  for (size_t i = 0; i < kTableKindCount; ++i)
    if (const Variable& t = terms.*kTableKinds[i].member; t.defined()) {
      kt[i] = kernel_table(kTableKinds[i], t, P, dtype, device);
      if (kTableKinds[i].shape != TableShape::RowWindow) continue;
      if (positions.is_tree() || positions.dims() != 1)
        fail("fused attention: table {} needs 1-D sequence positions, got {}", kTableKinds[i].name, positions.describe());
      P.W = t.size(3);
    }
  return kt;
}

// The op's inputs: q, k, v, then the tables present, with each table's place among them.
struct OpInputs {
  std::vector<Variable> inputs;
  std::vector<int> table_slot;  // input index of each table in KernelTables order (-1 absent)
};
OpInputs op_inputs(const Variable& q, const Variable& k, const Variable& v, const KernelTables& kt) {
  OpInputs in{{q, k, v}, {}};
  for (const Variable& t : kt) {
    in.table_slot.push_back(t.defined() ? static_cast<int>(in.inputs.size()) : -1);
    if (t.defined()) in.inputs.push_back(t);
  }
  return in;
}

// An empty buffer for each table gradient the backward wants (undefined for the others).
std::vector<Tensor> table_grad_buffers(const std::vector<Tensor>& table_values, const std::vector<int>& table_slot,
                                       const std::vector<bool>& needs, Device device) {
  std::vector<Tensor> dtables(table_values.size());
  for (size_t i = 0; i < table_values.size(); ++i)
    if (table_slot[i] >= 0 && needs[static_cast<size_t>(table_slot[i])])
      dtables[i] = Tensor::empty(table_values[i].shape(), table_values[i].dtype(), device);
  return dtables;
}

// The backward's gradients in the order of the op's inputs.
std::vector<Tensor> input_grads(const std::vector<bool>& needs, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                const std::vector<Tensor>& dtables, const std::vector<int>& table_slot) {
  std::vector<Tensor> grads(needs.size());
  if (needs[0]) grads[0] = dq;
  if (needs[1]) grads[1] = dk;
  if (needs[2]) grads[2] = dv;
  for (size_t i = 0; i < dtables.size(); ++i)
    if (table_slot[i] >= 0) grads[static_cast<size_t>(table_slot[i])] = dtables[i];
  return grads;
}

// t's data, or null for an undefined tensor (an absent table or an unwanted gradient).
template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <typename T>
fused_detail::Tables<T> table_pointers(const std::vector<Tensor>& t) {  // in KernelTables order
  fused_detail::Tables<T> tables;
  for (size_t i = 0; i < kTableKindCount; ++i) tables.of[i] = data_or_null<T>(t[i]);
  return tables;
}

// Everything the kernels need besides the tensors; `padded` owns the padding bytes.
struct Setup {
  Problem problem;
  std::shared_ptr<std::vector<uint8_t>> padded;
  Tensor padded_flags;  // int64 [B, N] on q's device, for the GPU kernels (undefined: no padding)
};

Setup make_setup(const Tensor& q, const Tensor& k, const AttentionSpec& spec, bool uses_tables) {
  Setup s;
  Problem& P = s.problem;
  P.B = q.size(0), P.H = q.size(1), P.N = k.size(2), P.Nq = q.size(2), P.Dh = q.size(3);
  P.scale = spec.scale;
  const PositionPair& pos = spec.positions;
  if (pos.keys().tokens() != P.N || pos.queries().tokens() != P.Nq)
    fail("fused attention: {} queries and {} keys, but the positions describe {}", P.Nq, P.N, pos.describe());
  P.geometry.tokens = P.N;
  if (pos.is_tree()) {
    if (spec.box) fail("fused attention: a key range needs grid positions, not {}", pos.describe());
    if (spec.causal_by_index)
      fail("fused attention: a causal mask over tree positions (by token index) needs the reference path");
    if (uses_tables)
      fail("fused attention: relative tables need grid or sequence positions, not {}", pos.describe());
    P.R = 0;
  } else {
    P.R = pos.relative_size();
    const OffsetBox full = OffsetBox::full(pos);
    const OffsetBox box = spec.box ? spec.box->intersect(full) : full;
    RowGeometry& g = P.geometry;
    g.structure = pos.keys().structure();
    g.query_structure = pos.queries().structure();
    g.query_first = pos.queries().coordinates().narrow(0, 0, 1).to_vector<int64_t>();
    g.relative_lo = pos.relative_lo();
    g.lo = box.lo;
    g.hi = box.hi;
    if (g.structure.size() > 8) fail("fused attention: at most 8 positional dims, got {}", pos.describe());
  }
  if (spec.key_padding.defined()) {
    const Tensor& m = spec.key_padding;
    if (m.dim() != 2 || m.size(0) != P.B || m.size(1) != P.N)
      fail("fused attention: key_padding must be [B, N] = [{}, {}], got {}", P.B, P.N, m.describe());
    // The GPU kernels' flags stay on q's device (no copy to the host and back); the CPU kernels
    // read bytes.
    s.padded_flags = mask_indicator(m.to(q.device()), kFloat64).to(kInt64).contiguous();
    if (q.device().is_cpu()) {
      const std::vector<int64_t> flags = s.padded_flags.to_vector<int64_t>();
      s.padded = std::make_shared<std::vector<uint8_t>>(flags.begin(), flags.end());
      P.padded = s.padded->data();
    }
  }
  return s;
}

// What every entry point checks first: q, k, v, and a hook that only the reference applies.
void check_call(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms) {
  if (!q.defined() || !k.defined() || !v.defined()) fail("fused attention: undefined q, k or v");
  if (q.dim() != 4 || k.shape() != v.shape() || k.dim() != 4 || q.size(0) != k.size(0) || q.size(1) != k.size(1) ||
      q.size(3) != k.size(3))
    fail("fused attention: k, v must be [B, H, N, Dh] and q [B, H, Nq, Dh], got q {}, k {}, v {}",
         q.value().describe(), k.value().describe(), v.value().describe());
  if (k.value().device() != q.value().device() || v.value().device() != q.value().device())
    fail("fused attention: q, k, v must be on one device, got q {}, k {}, v {}", q.value().describe(),
         k.value().describe(), v.value().describe());
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype() || !is_floating(q.dtype()))
    fail("fused attention: q, k, v must share float32 or float64, got {}, {}, {}", q.value().describe(),
         k.value().describe(), v.value().describe());
  if (const std::string why = terms.fused_blocker(); !why.empty()) fail("fused attention: {}", why);
}

// One call: the kernels' problem, the tables in KernelTables order, the inputs (contiguous) and
// the forward's results (allocated by fused_op), which the backward reads.
struct Call {
  Setup setup;
  std::vector<Tensor> tables;
  Tensor q, k, v, out, lse;  // out [B, H, Nq, Dh], lse [B, H, Nq]
};

// The CPU kernels' forward into c.out and c.lse.
void cpu_forward(const Call& c) {
  dispatch_float(c.q.dtype(), "fused attention", [&]<typename T>() {
    fused_detail::forward<T>(c.setup.problem, table_pointers<T>(c.tables), c.q.data<T>(), c.k.data<T>(),
                             c.v.data<T>(), c.out.data<T>(), c.lse.data<T>());
  });
}

// The CPU kernels' backward into dq, dk, dv and the wanted tables' gradients.
void cpu_backward(const Call& c, const Tensor& g, Tensor& dq, Tensor& dk, Tensor& dv,
                  const std::vector<Tensor>& dtables) {
  dispatch_float(c.q.dtype(), "fused attention backward", [&]<typename T>() {
    fused_detail::Grads<T> gr{dq.data<T>(), dk.data<T>(), dv.data<T>(), {}};
    for (size_t i = 0; i < kTableKindCount; ++i) gr.of[i] = data_or_null<T>(dtables[i]);
    fused_detail::backward<T>(c.setup.problem, table_pointers<T>(c.tables), c.q.data<T>(), c.k.data<T>(),
                              c.v.data<T>(), c.out.data<T>(), c.lse.data<T>(), g.data<T>(), gr);
  });
}

// ---------------------------------------------------------------- the GPU kernels (gpu/)

// The problem as fused_gpu_math.h reads it: the geometry as numbers, the tables' pointers.
template <typename T>
fused_gpu::Problem<T> gpu_problem(const Setup& s, const std::vector<Tensor>& tables) {
  const Problem& P = s.problem;
  fused_gpu::Problem<T> pb;
  pb.B = P.B, pb.H = P.H, pb.Nq = P.Nq, pb.N = P.N, pb.Dh = P.Dh, pb.R = P.R, pb.W = P.W;
  pb.scale = static_cast<T>(P.scale);
  pb.padded = data_or_null<int64_t>(s.padded_flags);
  const RowGeometry& g = P.geometry;
  fused_gpu::Geometry& G = pb.geometry;
  G.dims = static_cast<int>(g.structure.size());
  for (int d = 0; d < G.dims; ++d) {
    G.key_size[d] = g.structure[d], G.query_size[d] = g.query_structure[d], G.query_first[d] = g.query_first[d];
    G.lo[d] = g.lo[d], G.hi[d] = g.hi[d], G.relative_lo[d] = g.relative_lo[d];
  }
  for (int d = G.dims - 1; d >= 0; --d)
    G.rstride[d] = d == G.dims - 1 ? 1 : G.rstride[d + 1] * (G.query_size[d + 1] + G.key_size[d + 1] - 1);
  for (size_t kind = 0; kind < kTableKindCount; ++kind) pb.tables.of[kind] = data_or_null<T>(tables[kind]);
  return pb;
}

// The GPU kernels' forward into c.out and c.lse (on q's GPU, or their arithmetic on the host:
// where.host).
void gpu_forward(const Call& c, const fused_gpu::Where& where) {
  const Problem& P = c.setup.problem;
  dispatch_float(c.q.dtype(), "fused attention", [&]<typename T>() {
    const fused_gpu::Problem<T> pb = gpu_problem<T>(c.setup, c.tables);
    const fused_gpu::Parts parts = fused_gpu::Parts::plan(pb, where);
    const Tensor partials = Tensor::empty({c.lse.numel() * parts.rows * (fused_gpu::kForwardExtra + P.Dh)}, c.q.dtype(),
                                          c.q.device());
    fused_gpu::Scratch<T> scratch;
    scratch.forward = partials.data<T>();
    fused_gpu::forward<T>(pb, c.q.data<T>(), c.k.data<T>(), c.v.data<T>(), c.out.data<T>(), c.lse.data<T>(), scratch,
                          parts, where);
  });
}

// The GPU kernels' backward, with the scratch of fused_gpu.h's Scratch (each buffer only where its
// pass runs).
void gpu_backward(const Call& c, const Tensor& g, Tensor& dq, Tensor& dk, Tensor& dv,
                  const std::vector<Tensor>& dtables, const fused_gpu::Where& where) {
  const Problem& P = c.setup.problem;
  const DType dtype = c.q.dtype();
  const Device device = c.q.device();
  dispatch_float(dtype, "fused attention backward", [&]<typename T>() {
    fused_gpu::TableGrads<T> tg;
    for (size_t kind = 0; kind < kTableKindCount; ++kind) tg.of[kind] = data_or_null<T>(dtables[kind]);
    const fused_gpu::Problem<T> pb = gpu_problem<T>(c.setup, c.tables);
    const fused_gpu::Parts parts = fused_gpu::Parts::plan(pb, where);
    const auto buffer = [&](bool wanted, int64_t n, DType type) {
      return wanted ? Tensor::empty({n}, type, device) : Tensor();
    };
    const int64_t rows = P.B * P.H * P.Nq, keys = P.B * P.H * P.N, Dh = P.Dh;
    const Tensor D = buffer(true, rows, dtype), row_parts = buffer(true, rows * parts.rows * Dh, dtype),
                 key_parts = buffer(true, keys * parts.keys * (2 * Dh + 1), dtype),
                 entry_parts = buffer(fused_gpu::wants_entry_grads(tg) && P.R > 0,
                                      P.H * P.R * parts.entries * (fused_gpu::kEntryExtra + Dh), dtype),
                 share = buffer(tg[fused_gpu::kKeyBias] != nullptr, keys, dtype), support = buffer(P.W > 0, rows * 2, kInt64);
    fused_gpu::Scratch<T> scratch;
    scratch.D = D.data<T>(), scratch.rows = row_parts.data<T>(), scratch.keys = key_parts.data<T>();
    scratch.entries = data_or_null<T>(entry_parts), scratch.key_bias_share = data_or_null<T>(share);
    scratch.support = data_or_null<int64_t>(support);
    fused_gpu::backward<T>(pb, c.q.data<T>(), c.k.data<T>(), c.v.data<T>(), c.out.data<T>(), c.lse.data<T>(),
                           g.data<T>(), dq.data<T>(), dk.data<T>(), dv.data<T>(), tg, scratch, parts, where);
  });
}

// A call's problem, inputs and result buffers on q's device; its tables in the kernels' layout
// (differentiable) in `kt`.
Call make_call(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
               const AttentionSpec& spec, KernelTables& kt) {
  Call c{make_setup(q, k, spec, terms.uses_relative_tables()), {}, q.contiguous(), k.contiguous(), v.contiguous(), {}, {}};
  const Problem& P = c.setup.problem;
  c.out = Tensor::empty_like(c.q);
  c.lse = Tensor::empty({P.B, P.H, P.Nq}, q.dtype(), q.device());
  kt = kernel_tables(terms, c.setup.problem, spec.positions, q.dtype(), q.device());
  for (const Variable& t : kt) c.tables.push_back(t.defined() ? t.value() : Tensor());
  return c;
}

// The op (after check_call): the CPU kernels for CPU tensors, else (gpu given) the GPU kernels on
// q's GPU or, for where.host, their arithmetic on the CPU.
Variable fused_op(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms,
                  const AttentionSpec& spec, std::optional<fused_gpu::Where> gpu) {
  KernelTables kt;
  const Call c = make_call(q.value(), k.value(), v.value(), terms, spec, kt);
  const auto [inputs, table_slot] = op_inputs(q, k, v, kt);
  if (gpu) gpu_forward(c, *gpu);
  else cpu_forward(c);
  return record("fused_attention", c.out, inputs, [c, table_slot, gpu](const Tensor& g, const std::vector<bool>& needs) {
    const Tensor gc = g.contiguous();
    Tensor dq = Tensor::empty_like(c.q), dk = Tensor::empty_like(c.k), dv = Tensor::empty_like(c.v);
    const std::vector<Tensor> dtables = table_grad_buffers(c.tables, table_slot, needs, c.q.device());
    if (gpu) gpu_backward(c, gc, dq, dk, dv, dtables, *gpu);
    else cpu_backward(c, gc, dq, dk, dv, dtables);
    return input_grads(needs, dq, dk, dv, dtables, table_slot);
  });
}

}  // namespace

Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms,
                         const AttentionSpec& spec) {
  check_call(q, k, v, terms);
  const Device device = q.value().device();
  if (device.is_cuda()) return fused_op(q, k, v, terms, spec, fused_gpu::Where{false, device.index, 0});
  return fused_op(q, k, v, terms, spec, std::nullopt);
}

Variable fused_attention_gpu_emulation(const Variable& q, const Variable& k, const Variable& v,
                                       const AttentionTerms& terms, const AttentionSpec& spec, int64_t parts) {
  check_call(q, k, v, terms);
  if (!q.value().device().is_cpu())
    fail("fused_attention_gpu_emulation: runs the GPU kernels' arithmetic on the CPU; got q {}", q.value().describe());
  if (parts < 1) fail("fused_attention_gpu_emulation: parts must be at least 1, got {}", parts);
  return fused_op(q, k, v, terms, spec, fused_gpu::Where{true, 0, parts});
}

}  // namespace posgrad

// Tensor: factories, metadata, views and copies (see tensor.h). Kernels live in the backends.
#include "tensor/tensor.h"

#include <algorithm>
#include <cstring>

#include "tensor/backend.h"

namespace posgrad {

namespace {

Shape resolve_reshape(const Shape& requested, int64_t numel, const Shape& from) {
  Shape shape = requested;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("reshape: only one -1 allowed in {}", shape_str(requested));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail("reshape: negative size in {}", shape_str(requested));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      fail("reshape: cannot reshape {} ({} elements) into {}", shape_str(from), numel,
           shape_str(requested));
    shape[infer] = numel / known;
  } else if (known != numel) {
    fail("reshape: cannot reshape {} ({} elements) into {} ({} elements)", shape_str(from), numel,
         shape_str(requested), known);
  }
  return shape;
}

// Strides for viewing (shape, strides) as `target` without copying, or empty when impossible.
// Walks groups of old axes that multiply to groups of new axes; each old group must be
// internally contiguous.
Shape view_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  Shape out(target.size());
  if (shape_numel(shape) == 0) return contiguous_strides(target);
  size_t oi = 0, ni = 0;
  const size_t on = shape.size(), nn = target.size();
  while (oi < on || ni < nn) {
    // Skip size-1 axes on both sides (their stride does not matter).
    if (ni < nn && target[ni] == 1) { out[ni] = 1; ++ni; continue; }
    if (oi < on && shape[oi] == 1) { ++oi; continue; }
    if (oi >= on || ni >= nn) return {};
    int64_t old_size = shape[oi], new_size = target[ni];
    size_t old_start = oi, new_start = ni;
    ++oi; ++ni;
    while (old_size != new_size) {
      if (old_size < new_size) {
        if (oi >= on) return {};
        if (shape[oi] == 1) { ++oi; continue; }
        old_size *= shape[oi++];
      } else {
        if (ni >= nn) return {};
        new_size *= target[ni++];
      }
    }
    // The old group [old_start, oi) must be contiguous within itself.
    int64_t last = -1;
    for (size_t k = old_start; k < oi; ++k) {
      if (shape[k] == 1) continue;
      if (last >= 0 && strides[last] != strides[k] * shape[k]) return {};
      last = static_cast<int64_t>(k);
    }
    int64_t stride = strides[last];
    for (size_t k = ni; k-- > new_start;) {
      out[k] = stride;
      stride *= target[k];
    }
  }
  return out;
}

}  // namespace

// ------------------------------------------------------------ factories

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape)
    if (s < 0) fail("empty: negative size in shape {}", shape_str(shape));
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape) * dtype_size(dtype)),
                                         device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

Tensor Tensor::arange(int64_t n, DType dtype, Device device) {
  std::vector<double> values(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<double>(i);
  return from_vector(values, {n}).to(dtype).to(device);
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail("from_vector: {} values do not fill shape {} ({} elements)", values.size(),
         shape_str(shape), shape_numel(shape));
  Tensor t = empty(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::from_vector<float>(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector<double>(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector<int64_t>(const std::vector<int64_t>&, const Shape&);

// ------------------------------------------------------------ metadata

int64_t Tensor::size(int64_t axis) const { return shape_[normalize_axis(axis, shape_, "size")]; }
int64_t Tensor::stride(int64_t axis) const { return strides_[normalize_axis(axis, shape_, "stride")]; }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no elements: any strides describe the same (empty) layout
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return fmt::format("{}{} on {}", dtype_name(dtype_), shape_str(shape_), device_.str());
}

template <typename T>
T* Tensor::data() const {
  if (!defined()) fail("data: tensor is undefined");
  if (dtype_ != dtype_of<T>())
    fail("data: tensor is {}, asked for {}", dtype_name(dtype_), dtype_name(dtype_of<T>()));
  return static_cast<T*>(storage_->data()) + offset_;
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;

void* Tensor::raw_data() const {
  if (!defined()) fail("raw_data: tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * dtype_size(dtype_);
}

void check_dtype(const Tensor& t, DType expected, const char* op) {
  if (!t.defined()) fail("{}: tensor is undefined", op);
  if (t.dtype() != expected)
    fail("{}: expected {} but got {}", op, dtype_name(expected), t.describe());
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device())
    fail("{}: tensors are on different devices ({} and {})", op, a.describe(), b.describe());
}

// ------------------------------------------------------------ copies

Tensor Tensor::contiguous() const {
  if (!defined()) fail("contiguous: tensor is undefined");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  if (!defined()) fail("clone: tensor is undefined");
  Tensor out = empty(shape_, dtype_, device_);
  backend_for(device_).copy(*this, out);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (!defined()) fail("to: tensor is undefined");
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device_);
  backend_for(device_).copy(*this, out);
  return out;
}

Tensor Tensor::to(Device device) const {
  if (!defined()) fail("to: tensor is undefined");
  if (device == device_) return *this;
  // Cross-device copies go through the non-CPU side's backend.
  Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, device);
  backend_for(device.is_cpu() ? device_ : device).copy(src, out);
  return out;
}

void Tensor::copy_(const Tensor& src) {
  if (!defined() || !src.defined()) fail("copy_: undefined tensor");
  Shape target = broadcast_shapes(src.shape(), shape_, "copy_");
  if (target != shape_)
    fail("copy_: source {} does not broadcast to destination {}", src.describe(), describe());
  check_same_device(*this, src, "copy_");
  // A source sharing this storage (x[1:].copy_(x[:-1])) is read in full before anything is
  // written, on every backend (GPU threads would otherwise race with the writes).
  const Tensor from = src.storage() == storage_ ? src.clone() : src;
  backend_for(device_).copy(from.expand(shape_), *this);
}

void Tensor::fill_(double value) {
  if (!defined()) fail("fill_: tensor is undefined");
  if (is_contiguous()) {
    backend_for(device_).fill(*this, value);
  } else {
    copy_(full({}, value, dtype_, device_));
  }
}

double Tensor::item() const {
  if (numel() != 1) fail("item: tensor must have exactly one element, got {}", describe());
  Tensor cpu = to(kCPU).to(kFloat64).contiguous();
  return *cpu.data<double>();
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor cpu = to(kCPU).to(dtype_of<T>()).contiguous();
  const T* p = cpu.data<T>();
  return std::vector<T>(p, p + cpu.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

template <typename T>
T Tensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim())
    fail("at: {} indices for a {}-D tensor", index.size(), dim());
  Tensor t = *this;
  for (int64_t i : index) t = t.select(0, i);
  return static_cast<T>(t.item());
}
template float Tensor::at<float>(std::initializer_list<int64_t>) const;
template double Tensor::at<double>(std::initializer_list<int64_t>) const;
template int64_t Tensor::at<int64_t>(std::initializer_list<int64_t>) const;

// ------------------------------------------------------------ views

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  return t;
}

Tensor Tensor::view(const Shape& requested) const {
  const Shape shape = resolve_reshape(requested, numel(), shape_);
  Shape strides = view_strides(shape_, strides_, shape);
  if (strides.empty() && !shape.empty() && numel() > 0)
    fail("view: {} with strides {} cannot be viewed as {} without a copy (use reshape)", describe(),
         shape_str(strides_), shape_str(shape));
  if (shape.empty()) strides = {};
  return as_strided(shape, strides, offset_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape = resolve_reshape(requested, numel(), shape_);
  Shape strides = view_strides(shape_, strides_, shape);
  if (!strides.empty() || shape.empty() || numel() == 0)
    return as_strided(shape, shape.empty() ? Shape{} : strides, offset_);
  return clone().as_strided(shape, contiguous_strides(shape), 0);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  if (static_cast<int64_t>(order.size()) != dim())
    fail("permute: order {} does not match {}", shape_str(order), describe());
  Shape shape(order.size()), strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t a = normalize_axis(order[i], shape_, "permute");
    if (seen[a]) fail("permute: axis {} repeated in {} (permuting {})", a, shape_str(order), describe());
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return as_strided(shape, strides, offset_);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = normalize_axis(a, shape_, "transpose");
  b = normalize_axis(b, shape_, "transpose");
  Shape shape = shape_, strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return as_strided(shape, strides, offset_);
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t end, int64_t step) const {
  axis = normalize_axis(axis, shape_, "slice");
  const int64_t n = shape_[axis];
  if (step <= 0) fail("slice: step must be positive, got {} (slicing {})", step, describe());
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = shape_, strides = strides_;
  shape[axis] = (end - start + step - 1) / step;
  strides[axis] *= step;
  return as_strided(shape, strides, offset_ + start * strides_[axis]);
}

Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  axis = normalize_axis(axis, shape_, "narrow");
  if (start < 0 || length < 0 || start + length > shape_[axis])
    fail("narrow: [{}, {}) is outside axis {} of size {} in {}", start, start + length, axis,
         shape_[axis], describe());
  return slice(axis, start, start + length);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  axis = normalize_axis(axis, shape_, "select");
  const int64_t n = shape_[axis];
  if (index < -n || index >= n) fail("select: index {} out of range for axis {} of {}", index, axis, describe());
  if (index < 0) index += n;
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + axis);
  strides.erase(strides.begin() + axis);
  return as_strided(shape, strides, offset_ + index * strides_[axis]);
}

Tensor Tensor::expand(const Shape& target) const {
  if (target.size() < shape_.size())
    fail("expand: cannot expand {} to fewer dimensions {}", describe(), shape_str(target));
  const size_t lead = target.size() - shape_.size();
  Shape strides(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) continue;
    const int64_t s = shape_[i - lead];
    if (s == target[i]) strides[i] = strides_[i - lead];
    else if (s != 1)
      fail("expand: axis {} of {} has size {} and cannot become {} (expanding to {})", i - lead, describe(), s,
           target[i], shape_str(target));
  }
  return as_strided(target, strides, offset_);
}

Tensor Tensor::squeeze(int64_t axis) const {
  axis = normalize_axis(axis, shape_, "squeeze");
  if (shape_[axis] != 1) return *this;
  return select(axis, 0);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  axis = normalize_axis(axis, shape_, "unsqueeze", 1);
  Shape shape = shape_, strides = strides_;
  const int64_t stride = axis < dim() ? strides_[axis] * shape_[axis] : 1;
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, stride);
  return as_strided(shape, strides, offset_);
}

Tensor Tensor::flatten(int64_t start_axis, int64_t end_axis) const {
  if (dim() == 0) return reshape({1});
  start_axis = normalize_axis(start_axis, shape_, "flatten");
  end_axis = normalize_axis(end_axis, shape_, "flatten");
  if (start_axis > end_axis)
    fail("flatten: start axis {} comes after end axis {} in {}", start_axis, end_axis, describe());
  Shape shape(shape_.begin(), shape_.begin() + start_axis);
  int64_t merged = 1;
  for (int64_t i = start_axis; i <= end_axis; ++i) merged *= shape_[i];
  shape.push_back(merged);
  shape.insert(shape.end(), shape_.begin() + end_axis + 1, shape_.end());
  return reshape(shape);
}

// ------------------------------------------------------------ printing

namespace {
void print_rec(std::string& out, const std::vector<double>& v, const Shape& shape, size_t axis,
               int64_t base, bool is_int, int indent) {
  const int64_t n = shape[axis];
  int64_t inner = 1;
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  out += '[';
  const int64_t edge = 3;
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * edge + 1 && i == edge) {
      out += axis + 1 == shape.size() ? "..., " : fmt::format("...,\n{:{}}", "", indent + 1);
      i = n - edge - 1;
      continue;
    }
    if (axis + 1 == shape.size()) {
      const double x = v[base + i];
      out += is_int ? fmt::format("{}", static_cast<int64_t>(x)) : fmt::format("{:.4g}", x);
    } else {
      print_rec(out, v, shape, axis + 1, base + i * inner, is_int, indent + 1);
    }
    if (i + 1 < n) out += axis + 1 == shape.size() ? ", " : fmt::format(",\n{:{}}", "", indent + 1);
  }
  out += ']';
}
}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  const std::vector<double> v = to_vector<double>();
  std::string body;
  if (dim() == 0) body = dtype_ == kInt64 ? fmt::format("{}", static_cast<int64_t>(v[0])) : fmt::format("{:.6g}", v[0]);
  else if (numel() == 0) body = "[]";
  else print_rec(body, v, shape_, 0, 0, dtype_ == kInt64, 7);
  return fmt::format("tensor({}, {})", body, describe());
}

}  // namespace posgrad

// MpiProcessGroup: see mpi_process_group.h.
#include "distributed/mpi_process_group.h"

#include <mpi.h>

#include <limits>

#include "tensor/error.h"

namespace posgrad::distributed {

namespace {

// Throws Error naming `what` and MPI's message when `code` is not MPI_SUCCESS.
void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  fail("MPI {} failed: {}", what, std::string(message, static_cast<size_t>(length)));
}

MPI_Datatype mpi_type(const Tensor& t, const char* what) {
  POSGRAD_CHECK(t.defined(), "MPI {}: the tensor is undefined", what);
  POSGRAD_CHECK(t.device().is_cpu(), "MPI {}: {} is not on the CPU (CUDA tensors go through NCCL)", what,
                t.describe());
  POSGRAD_CHECK(t.is_contiguous(), "MPI {}: {} is not contiguous", what, t.describe());
  POSGRAD_CHECK(t.numel() <= std::numeric_limits<int>::max(), "MPI {}: {} has more elements than one call takes",
                what, t.describe());
  switch (t.dtype()) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
  }
  fail("MPI {}: unknown dtype", what);
}

}  // namespace

MpiProcessGroup::MpiProcessGroup() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  POSGRAD_CHECK(!initialized, "MPI was initialized twice in one process");
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "initialization");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "error handler");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "size");
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiProcessGroup::all_reduce_sum(Tensor& t) {
  if (t.numel() == 0) return;
  check(MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(t.numel()), mpi_type(t, "all-reduce"), MPI_SUM,
                      MPI_COMM_WORLD),
        "all-reduce");
}

namespace {

// One MPI_Iallreduce in flight; holds its tensor so the buffer outlives the operation.
class MpiPendingSum final : public ProcessGroup::PendingSum {
 public:
  explicit MpiPendingSum(Tensor& t) : buffer_(t) {
    if (t.numel() == 0) return;
    check(MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(t.numel()), mpi_type(t, "all-reduce"), MPI_SUM,
                         MPI_COMM_WORLD, &request_),
          "all-reduce (start)");
  }
  ~MpiPendingSum() override {
    // Unwinding from an error: MPI may still write into the buffer, so finish first (no throw).
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request_ != MPI_REQUEST_NULL) check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "all-reduce (wait)");
  }
  bool progress() override {
    int done = 1;
    if (request_ != MPI_REQUEST_NULL) check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "all-reduce (test)");
    return done != 0;
  }

 private:
  Tensor buffer_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

}  // namespace

std::unique_ptr<ProcessGroup::PendingSum> MpiProcessGroup::start_all_reduce_sum(Tensor& t) {
  return std::make_unique<MpiPendingSum>(t);
}

void MpiProcessGroup::all_reduce_sum(std::vector<double>& values) {
  if (values.empty()) return;
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD),
        "all-reduce");
}

void MpiProcessGroup::broadcast(Tensor& t, int root) {
  if (t.numel() == 0) return;
  check(MPI_Bcast(t.raw_data(), static_cast<int>(t.numel()), mpi_type(t, "broadcast"), root, MPI_COMM_WORLD),
        "broadcast");
}

void MpiProcessGroup::broadcast(std::string& bytes, int root) {
  int64_t length = static_cast<int64_t>(bytes.size());
  check(MPI_Bcast(&length, 1, MPI_INT64_T, root, MPI_COMM_WORLD), "broadcast");
  POSGRAD_CHECK(length <= std::numeric_limits<int>::max(), "MPI broadcast: {} bytes are more than one call takes",
                length);
  bytes.resize(static_cast<size_t>(length));
  if (length > 0) check(MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_BYTE, root, MPI_COMM_WORLD), "broadcast");
}

Tensor MpiProcessGroup::all_gather(const Tensor& t) {
  Tensor mine = t.contiguous();
  POSGRAD_CHECK(mine.dim() >= 1, "MPI all-gather: {} has no axis to stack along", t.describe());
  Shape shape = mine.shape();
  shape[0] *= size_;
  Tensor all = Tensor::empty(shape, mine.dtype(), kCPU);
  const MPI_Datatype type = mpi_type(mine, "all-gather");
  check(MPI_Allgather(mine.raw_data(), static_cast<int>(mine.numel()), type, all.raw_data(),
                      static_cast<int>(mine.numel()), type, MPI_COMM_WORLD),
        "all-gather");
  return all;
}

void MpiProcessGroup::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "barrier"); }

void MpiProcessGroup::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; in case an implementation does
}

}  // namespace posgrad::distributed

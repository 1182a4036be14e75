// safetensors round trips, the exact byte layout, every corruption the loader must name, and
// the atomic file writer underneath (no temporary left behind, old file kept on failure).
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <sys/resource.h>
#include <unistd.h>

#include "nn/atomic_file.h"
#include "nn/safetensors.h"
#include "tensor/ops.h"

using namespace posgrad;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / fmt::format("posgrad_st_{}_{}", ::getpid(), counter++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

void write_raw(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_raw(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A file as the spec describes it: u64 header size, header, data.
std::string file_bytes(const std::string& header, const std::string& data, uint64_t header_size_field = UINT64_MAX) {
  const uint64_t n = header_size_field == UINT64_MAX ? header.size() : header_size_field;
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return a.numel() == 0 ||
         std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel() * dtype_size(a.dtype()))) == 0;
}

// Loading `bytes` from a file must fail with a message naming the file and containing `needle`.
void expect_load_error(const TempDir& dir, const std::string& name, const std::string& bytes, const std::string& needle) {
  const fs::path path = dir.path / (name + ".safetensors");
  write_raw(path, bytes);
  try {
    load_safetensors(path);
    BOOST_ERROR(name << ": the corrupt file loaded without an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    BOOST_TEST_MESSAGE(name << ": " << msg);
    BOOST_TEST(msg.find(path.string()) != std::string::npos, name << ": message does not name the file: " << msg);
    BOOST_TEST(msg.find(needle) != std::string::npos, name << ": expected '" << needle << "' in: " << msg);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors)

BOOST_AUTO_TEST_CASE(round_trip_all_dtypes_and_shapes) {
  TempDir dir;
  Generator gen(1);
  Tensor special = Tensor::from_vector(
      std::vector<float>{-0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::quiet_NaN(), 3.5f, -1e30f},
      {2, 3});
  const NamedTensors tensors = {
      {"weight", normal({3, 4}, 0, 1, gen)},
      {"f64", normal({5}, 0, 1, gen, kFloat64)},
      {"indices", Tensor::from_vector(std::vector<int64_t>{0, -1, std::numeric_limits<int64_t>::max(),
                                                            std::numeric_limits<int64_t>::min(), 7, 8},
                                      {3, 1, 2})},
      {"scalar", Tensor::scalar(2.5)},
      {"scalar_i64", Tensor::scalar(-3, kInt64)},
      {"empty", Tensor::zeros({0})},
      {"empty_3d", Tensor::zeros({2, 0, 3}, kFloat64)},
      {"transposed", normal({3, 4}, 0, 1, gen).transpose(0, 1)},  // strided: saved contiguous
      {"special", special},
      {"layers.0.attention/q \"proj\"", Tensor::ones({1})},  // JSON escaping in names
  };
  const std::map<std::string, std::string> metadata = {{"config", "{\"width\": 64}"}, {"seed", "9188"},
                                                       {"note", "tab\there, unicode \u00e9"}};
  const fs::path path = dir.path / "model.safetensors";
  save_safetensors(path, tensors, metadata);
  BOOST_TEST(dir.entries() == std::vector<std::string>({"model.safetensors"}));  // no temporary left

  const SafetensorsContents loaded = load_safetensors(path);
  BOOST_REQUIRE_EQUAL(loaded.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    BOOST_TEST(loaded.tensors[i].first == tensors[i].first);  // order kept
    BOOST_TEST(same_bytes(loaded.tensors[i].second, tensors[i].second), tensors[i].first);
    BOOST_TEST(loaded.tensors[i].second.is_contiguous());
  }
  BOOST_TEST(loaded.at("scalar").dim() == 0);
  BOOST_TEST(loaded.at("scalar").item() == 2.5);
  BOOST_TEST((loaded.at("empty_3d").shape() == Shape{2, 0, 3}));
  BOOST_TEST(loaded.metadata == metadata);
  BOOST_TEST(loaded.contains("weight"));
  BOOST_TEST(!loaded.contains("missing"));
  BOOST_CHECK_THROW(loaded.at("missing"), Error);

  // Nothing at all: a valid file too.
  save_safetensors(dir.path / "nothing.safetensors", {});
  BOOST_TEST(load_safetensors(dir.path / "nothing.safetensors").tensors.empty());
}

BOOST_AUTO_TEST_CASE(exact_byte_layout) {
  // Two tensors and metadata: the header is compact JSON in insertion order, padded with spaces
  // to a multiple of 8, and the data follows back to back, little-endian.
  const std::string bytes = encode_safetensors(
      {{"b", Tensor::from_vector({1.0f, -2.0f}, {2})}, {"a", Tensor::scalar(3, kInt64)}}, {{"k", "v"}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  BOOST_TEST(n % 8 == 0);
  BOOST_REQUIRE(bytes.size() == 8 + n + 8 + 8);
  std::string header = bytes.substr(8, n);
  const std::string expected =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"__metadata__":{"k":"v"}})";
  BOOST_TEST(header.substr(0, expected.size()) == expected);
  BOOST_TEST(header.find_first_not_of(' ', expected.size()) == std::string::npos);  // only padding after it
  float f[2];
  int64_t i = 0;
  std::memcpy(f, bytes.data() + 8 + n, 8);
  std::memcpy(&i, bytes.data() + 8 + n + 8, 8);
  BOOST_TEST(f[0] == 1.0f);
  BOOST_TEST(f[1] == -2.0f);
  BOOST_TEST(i == 3);
}

BOOST_AUTO_TEST_CASE(reads_files_written_by_others) {
  // Written by hand from the spec, like the Python package writes it: keys sorted by name (not by
  // offset), no metadata, no padding.
  TempDir dir;
  std::string data(8 + 4, '\0');
  const double d = -1.25;
  const float x = 7.0f;
  std::memcpy(data.data(), &x, 4);      // "z" at [0, 4)
  std::memcpy(data.data() + 4, &d, 8);  // "a" at [4, 12)
  const std::string header =
      R"({"a":{"dtype":"F64","shape":[1,1],"data_offsets":[4,12]},"z":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
  write_raw(dir.path / "x.safetensors", file_bytes(header, data));
  const SafetensorsContents c = load_safetensors(dir.path / "x.safetensors");
  BOOST_TEST(c.at("a").to_vector<double>()[0] == -1.25);
  BOOST_TEST(c.at("z").item() == 7.0);
  BOOST_TEST(c.metadata.empty());
}

BOOST_AUTO_TEST_CASE(corrupt_files_are_named_errors) {
  TempDir dir;
  const std::string f32_2 = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\1');
  expect_load_error(dir, "short", std::string(5, '\0'), "shorter than the 8-byte header size");
  expect_load_error(dir, "empty", "", "shorter than the 8-byte header size");
  expect_load_error(dir, "header_too_big", file_bytes(f32_2, eight, 1000), "header size is 1000 bytes");
  expect_load_error(dir, "header_huge", file_bytes(f32_2, eight, UINT64_MAX - 1), "header size");
  expect_load_error(dir, "bad_json", file_bytes(R"({"t": {"dtype": )", ""), "not valid JSON");
  expect_load_error(dir, "not_object", file_bytes("[1, 2]", ""), "not a JSON object");
  expect_load_error(dir, "entry_not_object", file_bytes(R"({"t": 3})", ""), "tensor 't': the entry is not");
  expect_load_error(dir, "missing_field", file_bytes(R"({"t":{"dtype":"F32","shape":[2]}})", eight), "needs");
  expect_load_error(dir, "unknown_field", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", eight),
                    "unknown field 'x'");
  expect_load_error(dir, "unsupported_dtype", file_bytes(R"({"t":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", eight),
                    "unsupported dtype 'F16'");
  expect_load_error(dir, "unknown_dtype", file_bytes(R"({"t":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", eight),
                    "unsupported dtype 'Q7'");
  expect_load_error(dir, "negative_shape", file_bytes(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
                    "non-integer or negative");
  expect_load_error(dir, "float_shape", file_bytes(R"({"t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", eight),
                    "non-integer or negative");
  expect_load_error(dir, "huge_shape",
                    file_bytes(R"({"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
                    "too large");
  expect_load_error(dir, "size_mismatch", file_bytes(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
                    "span 8 bytes but dtype F32 and shape [3] need 12");
  expect_load_error(dir, "reversed_offsets", file_bytes(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight),
                    "end before they begin");
  expect_load_error(dir, "bad_offsets", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight),
                    "not a pair of non-negative integers");
  expect_load_error(dir, "outside", file_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight),
                    "outside the data (8 bytes after the header)");
  expect_load_error(dir, "overlap",
                    file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                               eight),
                    "overlaps tensor 'a'");
  expect_load_error(dir, "gap",
                    file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                               std::string(12, '\0')),
                    "data bytes [4, 8) before tensor 'b' belong to no tensor");
  expect_load_error(dir, "trailing", file_bytes(f32_2, eight + "xyz"), "3 trailing bytes");
  expect_load_error(dir, "metadata_not_string",
                    file_bytes(R"({"__metadata__":{"seed":9188}})", ""), "metadata 'seed' is not a string");
  expect_load_error(dir, "metadata_not_object", file_bytes(R"({"__metadata__":[1]})", ""), "'__metadata__' is not");

  // A missing file names the path too.
  try {
    load_safetensors(dir.path / "absent.safetensors");
    BOOST_ERROR("loading a missing file succeeded");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("absent.safetensors") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(bad_tensors_are_refused_on_save) {
  TempDir dir;
  const fs::path path = dir.path / "x.safetensors";
  BOOST_CHECK_THROW(save_safetensors(path, {{"a", Tensor::ones({1})}, {"a", Tensor::ones({1})}}), Error);
  BOOST_CHECK_THROW(save_safetensors(path, {{"__metadata__", Tensor::ones({1})}}), Error);
  BOOST_CHECK_THROW(save_safetensors(path, {{"", Tensor::ones({1})}}), Error);
  BOOST_CHECK_THROW(save_safetensors(path, {{"u", Tensor()}}), Error);
  BOOST_CHECK_THROW(save_safetensors(path, {{"bad\xff utf8", Tensor::ones({1})}}), Error);
  BOOST_TEST(dir.entries().empty());  // nothing written, no temporary left
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(atomic_file)

BOOST_AUTO_TEST_CASE(writes_and_replaces_without_leftovers) {
  TempDir dir;
  const fs::path path = dir.path / "state.json";
  write_file_atomically(path, "first");
  BOOST_TEST(read_raw(path) == "first");
  write_file_atomically(path, "second, longer");
  BOOST_TEST(read_raw(path) == "second, longer");
  write_file_atomically(path, "");
  BOOST_TEST(read_raw(path).empty());
  BOOST_TEST(read_file_bytes(path).empty());
  BOOST_TEST(dir.entries() == std::vector<std::string>({"state.json"}));
}

BOOST_AUTO_TEST_CASE(failures_throw_name_the_path_and_leave_no_temporary) {
  TempDir dir;
  // The target is a directory: the rename fails, the directory survives.
  const fs::path sub = dir.path / "sub";
  fs::create_directories(sub);
  write_raw(sub / "keep", "x");
  try {
    write_file_atomically(sub, "data");
    BOOST_ERROR("writing over a directory succeeded");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find(sub.string()) != std::string::npos, e.what());
    BOOST_TEST_MESSAGE(e.what());
  }
  BOOST_TEST(fs::is_directory(sub));
  BOOST_TEST(read_raw(sub / "keep") == "x");
  BOOST_TEST(dir.entries() == std::vector<std::string>({"sub"}));

  // The parent directory does not exist.
  const fs::path orphan = dir.path / "missing" / "file.bin";
  try {
    write_file_atomically(orphan, "data");
    BOOST_ERROR("writing into a missing directory succeeded");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find(orphan.string()) != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("No such file or directory") != std::string::npos, e.what());
  }

  // A directory we may not write to (permissions do not bind root, so only checked otherwise).
  if (::geteuid() != 0) {
    const fs::path locked = dir.path / "locked";
    fs::create_directories(locked);
    write_raw(locked / "f", "old");
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    BOOST_CHECK_THROW(write_file_atomically(locked / "f", "new"), Error);
    fs::permissions(locked, fs::perms::owner_all);
    BOOST_TEST(read_raw(locked / "f") == "old");
  }
}

BOOST_AUTO_TEST_CASE(old_file_survives_a_failed_write) {
  // Make the write itself fail half way: a file-size limit turns write() into EFBIG (this binds
  // root too). The old file must be untouched and the temporary removed.
  TempDir dir;
  const fs::path path = dir.path / "model.safetensors";
  write_file_atomically(path, "the old contents");
  rlimit old_limit{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error;
  try {
    write_file_atomically(path, std::string(100000, 'n'));
  } catch (const Error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  BOOST_TEST_MESSAGE(error);
  BOOST_TEST(!error.empty(), "the write past the file-size limit did not fail");
  BOOST_TEST(error.find(path.string()) != std::string::npos, error);
  BOOST_TEST(error.find("too large") != std::string::npos, error);  // strerror(EFBIG)
  BOOST_TEST(read_raw(path) == "the old contents");
  BOOST_TEST(dir.entries() == std::vector<std::string>({"model.safetensors"}));
}

BOOST_AUTO_TEST_CASE(read_errors_name_the_path) {
  TempDir dir;
  try {
    read_file_bytes(dir.path);
    BOOST_ERROR("reading a directory succeeded");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("directory") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(read_file_bytes(dir.path / "nope"), Error);
}

BOOST_AUTO_TEST_SUITE_END()

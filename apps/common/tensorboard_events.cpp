// TensorboardEvents: see tensorboard_events.h.
#include "apps/common/tensorboard_events.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <unistd.h>

#include "apps/common/tfrecord.h"
#include "tensor/error.h"
#include "tensorboard_event.pb.h"

namespace posgrad::apps {

namespace fs = std::filesystem;
namespace tb = posgrad::tensorboard;

namespace {

constexpr const char* kEventFilePrefix = "events.out.tfevents.";

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// A name no other writer of this process or another one takes: the counter separates files
// opened in the same second by one process.
fs::path new_event_file(const fs::path& run_dir) {
  static std::atomic<int> opened{0};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  return run_dir / fmt::format("{}{:010d}.{}.{}.{}", kEventFilePrefix, seconds, host_name(), getpid(), opened++);
}

tb::Event event_at(int64_t step) {
  tb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  return event;
}

uint32_t big_endian_32(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

void flatten(const std::string& tag, const nlohmann::json& value, std::vector<std::pair<std::string, double>>& out) {
  if (value.is_number()) {
    const double x = value.get<double>();
    if (std::isfinite(x)) out.emplace_back(tag, x);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) flatten(fmt::format("{}/{}", tag, i), value[i], out);
  } else if (value.is_object()) {
    for (const auto& [key, item] : value.items()) flatten(tag + "/" + key, item, out);
  }
}

}  // namespace

TensorboardEvents::TensorboardEvents(const fs::path& run_dir) : path_(new_event_file(run_dir)) {
  file_ = std::fopen(path_.c_str(), "wb");
  POSGRAD_CHECK(file_ != nullptr, "cannot create '{}': {}", path_.string(), std::strerror(errno));
  tb::Event first = event_at(0);
  first.set_file_version("brain.Event:2");
  write_event(first.SerializeAsString());
}

TensorboardEvents::~TensorboardEvents() {
  if (file_) std::fclose(file_);
}

void TensorboardEvents::write_event(const std::string& serialized_event) {
  const std::string record = tfrecord_frame(serialized_event);
  const bool ok = std::fwrite(record.data(), 1, record.size(), file_) == record.size() && std::fflush(file_) == 0;
  POSGRAD_CHECK(ok, "cannot write '{}': {}", path_.string(), std::strerror(errno));
}

void TensorboardEvents::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return;
  tb::Event event = event_at(step);
  for (const auto& [tag, value] : values) {
    tb::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  write_event(event.SerializeAsString());
}

void TensorboardEvents::image_png(const std::string& tag, int64_t step, const std::string& png) {
  // The signature, then the IHDR chunk: length, "IHDR", width, height, bit depth, colour type.
  static const std::string kSignature("\x89PNG\r\n\x1a\n", 8);
  POSGRAD_CHECK(png.size() >= 33 && png.compare(0, 8, kSignature) == 0 && png.compare(12, 4, "IHDR") == 0,
                "TensorBoard image '{}': the bytes are not a PNG file", tag);
  const int colour_type = static_cast<unsigned char>(png[25]);
  // PNG colour types 0 grey, 2 RGB, 3 palette (RGB), 4 grey + alpha, 6 RGBA -> channels.
  const int channels = colour_type == 0 ? 1 : colour_type == 4 ? 2 : colour_type == 6 ? 4 : 3;
  tb::Event event = event_at(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tb::Summary::Image* image = v->mutable_image();
  image->set_width(static_cast<int32_t>(big_endian_32(png, 16)));
  image->set_height(static_cast<int32_t>(big_endian_32(png, 20)));
  image->set_colorspace(channels);
  image->set_encoded_image_string(png);
  write_event(event.SerializeAsString());
}

void TensorboardEvents::figures(const fs::path& folder, int64_t step) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return;
  std::vector<fs::path> pngs;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".png") pngs.push_back(entry.path());
  std::sort(pngs.begin(), pngs.end());
  for (const fs::path& png : pngs) {
    std::ifstream in(png, std::ios::binary);
    POSGRAD_CHECK(in.good(), "cannot read figure '{}'", png.string());
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    image_png("figures/" + png.stem().string(), step, bytes);
  }
}

void TensorboardEvents::text(const std::string& tag, int64_t step, const std::string& markdown) {
  tb::Event event = event_at(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_metadata()->set_data_class(tb::DATA_CLASS_TENSOR);
  v->mutable_tensor()->set_dtype(tb::DT_STRING);
  v->mutable_tensor()->add_string_val(markdown);
  write_event(event.SerializeAsString());
}

void TensorboardEvents::session_start(int64_t step) {
  tb::Event event = event_at(step);
  event.mutable_session_log()->set_status(tb::SessionLog::START);
  write_event(event.SerializeAsString());
}

std::vector<std::pair<std::string, double>> scalar_fields(const nlohmann::json& record) {
  std::vector<std::pair<std::string, double>> out;
  if (!record.is_object()) return out;
  for (const auto& [key, value] : record.items())
    if (key != "step") flatten(key, value, out);
  return out;
}

std::string markdown_code_block(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const size_t stop = end == std::string::npos ? text.size() : end + 1;
    out += "    " + text.substr(start, stop - start);
    start = stop;
  }
  return out;
}

void remove_event_files(const fs::path& run_dir) {
  std::error_code ec;
  std::vector<fs::path> old;
  for (const auto& entry : fs::directory_iterator(run_dir, ec))
    if (entry.path().filename().string().rfind(kEventFilePrefix, 0) == 0) old.push_back(entry.path());
  for (const fs::path& p : old) {
    fs::remove(p, ec);
    POSGRAD_CHECK(!ec, "cannot remove the old event file '{}': {}", p.string(), ec.message());
  }
}

}  // namespace posgrad::apps

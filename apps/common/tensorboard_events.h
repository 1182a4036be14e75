// TensorboardEvents: one TensorBoard event file in a run folder,
//   <run>/events.out.tfevents.<unix seconds>.<host>.<pid>.<n>
// so that `tensorboard --logdir runs/` shows every run below runs/ (a sweep's runs as
// <arm>/seed-<n>). The file opens with an Event holding file_version "brain.Event:2"; each write
// appends one Event (TFRecord-framed, tfrecord.h; messages in tensorboard_event.proto) and
// flushes, so a killed run keeps what it logged. What RunDir writes through it: every number of
// a metrics record with a "step" (scalar_fields), the figures as PNG images, the resolved config
// as text (plugin "text"), and a session START at the first repeated step of a resumed run.
// TensorBoard keeps scalars as 32-bit floats: a metric reads back rounded to float.
//
// Deliberately does not: read event files (tests use tfrecord.h and the generated messages, or
// TensorBoard's own reader), write histograms, graphs or audio, or buffer across writes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace posgrad::apps {

class TensorboardEvents {
 public:
  // Creates a new event file in `run_dir` (which must exist) and writes its first record.
  explicit TensorboardEvents(const std::filesystem::path& run_dir);
  ~TensorboardEvents();
  TensorboardEvents(const TensorboardEvents&) = delete;
  TensorboardEvents& operator=(const TensorboardEvents&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // One Event at `step` with a scalar per (tag, value).
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // A PNG image (the file's bytes); its size and colour type come from the PNG header.
  void image_png(const std::string& tag, int64_t step, const std::string& png);
  // Every *.png of `folder` (by name) as an image tagged "figures/<name without .png>".
  void figures(const std::filesystem::path& folder, int64_t step);
  // Text shown by TensorBoard's text plugin (Markdown).
  void text(const std::string& tag, int64_t step, const std::string& markdown);
  // A session restart at `step`: TensorBoard drops what earlier files logged at steps >= `step`.
  void session_start(int64_t step);

 private:
  void write_event(const std::string& serialized_event);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

// The scalars of a metrics record: every finite number tagged by its key, numbers inside arrays
// and objects tagged by their path ({"head_spans": [[3, 5]]} gives "head_spans/0/1" = 5 for
// layer 0, head 1); "step" itself, strings, booleans and nulls are left out.
std::vector<std::pair<std::string, double>> scalar_fields(const nlohmann::json& record);

// `text` indented by four spaces: Markdown (TensorBoard's text plugin) shows it as written.
std::string markdown_code_block(const std::string& text);

// Removes the event files (events.out.tfevents.*) directly in `run_dir`.
void remove_event_files(const std::filesystem::path& run_dir);

}  // namespace posgrad::apps

// Test helper: the events of a run folder's TensorBoard event files (events.out.tfevents.*, in
// name order), decoded with the project's messages (apps/common/tensorboard_event.proto), and the
// tags they hold by kind.
// Deliberately not here: checking values against metrics.jsonl — tests/apps/tensorboard_reader.py
// does that with TensorBoard's own reader.
#pragma once

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "apps/common/tfrecord.h"
#include "tensor/error.h"
#include "tensorboard_event.pb.h"

namespace posgrad::test {

inline std::vector<std::filesystem::path> event_files(const std::filesystem::path& run_dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

inline std::vector<posgrad::tensorboard::Event> read_events(const std::filesystem::path& file) {
  std::vector<posgrad::tensorboard::Event> events;
  for (const std::string& record : posgrad::apps::read_tfrecords(file)) {
    posgrad::tensorboard::Event e;
    if (!e.ParseFromString(record)) fail("'{}': a record is not an Event", file.string());
    events.push_back(std::move(e));
  }
  return events;
}

// The tags of every summary value in the run folder's event files, by kind.
struct EventTags {
  std::set<std::string> scalars, images, texts;
};

inline EventTags event_tags(const std::filesystem::path& run_dir) {
  EventTags tags;
  for (const auto& file : event_files(run_dir))
    for (const auto& event : read_events(file))
      for (const auto& v : event.summary().value()) {
        if (v.has_simple_value()) tags.scalars.insert(v.tag());
        if (v.has_image()) tags.images.insert(v.tag());
        if (v.has_tensor() && v.metadata().plugin_data().plugin_name() == "text") tags.texts.insert(v.tag());
      }
  return tags;
}

}  // namespace posgrad::test

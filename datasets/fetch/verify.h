// Checking a data folder against the catalogue's known SHA-256s: every known file of every
// dataset folder that is there (MNIST's .gz files by their decompressed contents). A file in a
// dataset folder that the catalogue does not know (e.g. CIFAR-10's test_batch.bin, whose SHA-256
// is not published) is listed as not checked.
// This file deliberately downloads nothing and changes no file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/fetch/catalogue.h"

namespace posgrad::fetch {

struct FileCheck {
  std::string path;     // relative to the data folder, e.g. "cifar10/data_batch_1.bin"
  std::string problem;  // empty: matches
  bool checked = true;  // false: no known checksum (not a failure)
};

struct DatasetCheck {
  std::string name;
  bool present = false;  // its folder exists
  std::vector<FileCheck> files;
  bool ok() const;       // present and every known file matches
};

DatasetCheck verify_dataset(const DatasetSpec& spec, const std::filesystem::path& data_dir);
// SHA-256 of a file's contents, gunzipped first when `gunzip` (Errors name the file).
std::string content_sha256(const std::filesystem::path& path, bool gunzip);

}  // namespace posgrad::fetch

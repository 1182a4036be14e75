// What posgrad-data knows about each dataset: where its files are published (the canonical URL and
// the mirrors torchvision lists, HTTPS only), the checksum its publisher gives for each file, how
// it is unpacked into the data folder, and the SHA-256 of every file of the finished folder (for
// `posgrad-data verify`). The built-in catalogue covers cifar10, mnist and tinyshakespeare;
// load_catalogue() reads one of the same shape from a JSON file (tests, private mirrors).
// This file deliberately downloads, unpacks and checks nothing (fetch.h, verify.h do).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/checksum.h"

namespace posgrad::fetch {

// One file as published: fetched from <base url><name>.
struct RemoteFile {
  std::string name;       // e.g. "train-images-idx3-ubyte.gz"
  DigestKind digest;      // the kind of checksum its publisher gives
  std::string expected;   // that checksum, lowercase hex
  int64_t max_bytes = 0;  // a download larger than this is refused
};

// One file of the finished dataset folder and the SHA-256 of its contents; `gunzip`: of the
// decompressed bytes (MNIST's .gz files exist in several compressions of the same contents).
struct KnownFile {
  std::string path;  // relative to the dataset's folder
  std::string sha256;
  bool gunzip = false;
};

enum class Unpack { None, TarGz };

struct DatasetSpec {
  std::string name;                    // the name on the command line, e.g. "cifar10"
  std::string folder;                  // its folder in the data folder
  std::vector<std::string> base_urls;  // tried in order; each ends with '/'
  std::vector<RemoteFile> files;
  Unpack unpack = Unpack::None;        // TarGz: files[0] is an archive unpacked into folder
  std::string archive_folder;          // TarGz: the archive's top folder, whose contents become folder
  int64_t max_unpacked_bytes = 0;      // TarGz: cap per unpacked entry
  std::vector<KnownFile> known_files;  // what `verify` checks
};

std::vector<DatasetSpec> builtin_catalogue();
// A catalogue from JSON: a list of objects with the fields of DatasetSpec (docs/datasets.md shows
// one). Errors name the file and the field.
std::vector<DatasetSpec> load_catalogue(const std::filesystem::path& json_file);
// The named dataset; an Error listing the known names otherwise.
const DatasetSpec& find_dataset(const std::vector<DatasetSpec>& catalogue, const std::string& name);

}  // namespace posgrad::fetch

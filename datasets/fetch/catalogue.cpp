// The built-in dataset catalogue and the JSON reader for catalogues given with --catalogue.
// Sources of the numbers: the publishers' pages and torchvision (URLs, MD5s of the downloads); the
// SHA-256s of the unpacked files are those of the project's shared data folder (SHA256SUMS), the
// MNIST ones of the decompressed IDX files (whose MD5s match the ones MNIST's page implies and
// torchvision checks after decompressing).
#include "datasets/fetch/catalogue.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "tensor/error.h"

namespace posgrad::fetch {

namespace {
constexpr int64_t kMiB = 1 << 20;
}

std::vector<DatasetSpec> builtin_catalogue() {
  DatasetSpec cifar10;
  cifar10.name = "cifar10";
  cifar10.folder = "cifar10";
  cifar10.base_urls = {"https://www.cs.toronto.edu/~kriz/"};
  cifar10.files = {{"cifar-10-binary.tar.gz", DigestKind::Md5, "c32a1d4ab5d03f1284b67883e8d87530", 200 * kMiB}};
  cifar10.unpack = Unpack::TarGz;
  cifar10.archive_folder = "cifar-10-batches-bin";
  cifar10.max_unpacked_bytes = 64 * kMiB;
  cifar10.known_files = {
      {"batches.meta.txt", "2ce042b1e0b48db4bb214408e6414ba18b2731c24af244f2d6c112fddf31af00"},
      {"data_batch_1.bin", "cee916563c9f80d84e3cc88e17fdc0941787f1244f00a67874d45b261883ada5"},
      {"data_batch_2.bin", "a591ca11fa1708a91ee40f54b3da4784ccd871ecf2137de63f51ada8b3fa57ed"},
      {"data_batch_3.bin", "bbe8596564c0f86427f876058170b84dac6670ddf06d79402899d93ceea26f67"},
      {"data_batch_4.bin", "014e562d6e23c72197cc727519169a60359f5eccd8945ad5a09d710285ff4e48"},
      {"data_batch_5.bin", "755304fc0b379caeae8c14f0dac912fbc7d6cd469eb67a1029a08a39453a9add"}};

  DatasetSpec mnist;
  mnist.name = "mnist";
  mnist.folder = "mnist";
  mnist.base_urls = {"https://ossci-datasets.s3.amazonaws.com/mnist/"};
  mnist.files = {
      {"train-images-idx3-ubyte.gz", DigestKind::Md5, "f68b3c2dcbeaaa9fbdd348bbdeb94873", 32 * kMiB},
      {"train-labels-idx1-ubyte.gz", DigestKind::Md5, "d53e105ee54ea40749a09fcbcd1e9432", 1 * kMiB},
      {"t10k-images-idx3-ubyte.gz", DigestKind::Md5, "9fb629c4189551a2d022fa330f9573f3", 8 * kMiB},
      {"t10k-labels-idx1-ubyte.gz", DigestKind::Md5, "ec29112dd5afa0611ce80d1b7f02629c", 1 * kMiB}};
  mnist.known_files = {
      {"train-images-idx3-ubyte.gz", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", true},
      {"train-labels-idx1-ubyte.gz", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", true},
      {"t10k-images-idx3-ubyte.gz", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", true},
      {"t10k-labels-idx1-ubyte.gz", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", true}};

  DatasetSpec shakespeare;
  shakespeare.name = "tinyshakespeare";
  shakespeare.folder = "tinyshakespeare";
  shakespeare.base_urls = {"https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"};
  shakespeare.files = {
      {"input.txt", DigestKind::Sha256, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 4 * kMiB}};
  shakespeare.known_files = {{"input.txt", "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"}};

  return {cifar10, mnist, shakespeare};
}

namespace {
using nlohmann::json;

template <typename T>
T field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) fail("{}: missing field \"{}\"", where, key);
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    fail("{}: field \"{}\" has the wrong type", where, key);
  }
}

DatasetSpec dataset_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: a dataset must be a JSON object", where);
  DatasetSpec d;
  d.name = field<std::string>(j, "name", where);
  d.folder = j.value("folder", d.name);
  d.base_urls = field<std::vector<std::string>>(j, "urls", where);
  if (d.base_urls.empty()) fail("{}: \"urls\" is empty", where);
  for (const auto& url : d.base_urls)
    if (url.empty() || url.back() != '/') fail("{}: URL \"{}\" must end with '/'", where, url);
  const json files = field<json>(j, "files", where);
  if (!files.is_array() || files.empty()) fail("{}: \"files\" must be a non-empty list", where);
  for (const json& f : files) {
    const std::string fwhere = where + " file";
    RemoteFile r;
    r.name = field<std::string>(f, "name", fwhere);
    if (f.contains("md5")) {
      r.digest = DigestKind::Md5;
      r.expected = field<std::string>(f, "md5", fwhere);
    } else {
      r.digest = DigestKind::Sha256;
      r.expected = field<std::string>(f, "sha256", fwhere + " (md5 or sha256)");
    }
    r.max_bytes = field<int64_t>(f, "max_bytes", fwhere);
    d.files.push_back(r);
  }
  const std::string unpack = j.value("unpack", std::string("none"));
  if (unpack == "tar.gz") {
    d.unpack = Unpack::TarGz;
    d.archive_folder = field<std::string>(j, "archive_folder", where);
    d.max_unpacked_bytes = field<int64_t>(j, "max_unpacked_bytes", where);
    if (d.files.size() != 1) fail("{}: a tar.gz dataset has exactly one file, the archive", where);
  } else if (unpack != "none") {
    fail("{}: \"unpack\" must be \"none\" or \"tar.gz\", not \"{}\"", where, unpack);
  }
  if (j.contains("known_files"))
    for (const json& k : j.at("known_files"))
      d.known_files.push_back({field<std::string>(k, "path", where + " known file"),
                               field<std::string>(k, "sha256", where + " known file"), k.value("gunzip", false)});
  return d;
}
}  // namespace

std::vector<DatasetSpec> load_catalogue(const std::filesystem::path& json_file) {
  std::ifstream in(json_file);
  if (!in) fail("{}: cannot open the catalogue", json_file.string());
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON ({})", json_file.string(), e.what());
  }
  if (!j.is_array() || j.empty()) fail("{}: a catalogue is a non-empty JSON list of datasets", json_file.string());
  std::vector<DatasetSpec> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(dataset_from_json(j[i], fmt::format("{}: dataset {}", json_file.string(), i + 1)));
  return out;
}

const DatasetSpec& find_dataset(const std::vector<DatasetSpec>& catalogue, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& d : catalogue) {
    if (d.name == name) return d;
    names.push_back(d.name);
  }
  fail("unknown dataset \"{}\"; known: {}", name, fmt::join(names, ", "));
}

}  // namespace posgrad::fetch

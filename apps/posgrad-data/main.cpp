// posgrad-data: fetches the datasets the apps read (cifar10, mnist, tinyshakespeare) from their
// publishers, checks them, and verifies a data folder.
//   posgrad-data list                                   the datasets, their folders and URLs
//   posgrad-data fetch NAME... [--dir D] [--base-url U] download, check, unpack into D/<folder>
//   posgrad-data verify [NAME...] [--dir D]             check D's files against the known SHA-256s
// --dir defaults to the data folder the apps find (datasets/data_dir.h), else ../shared/data.
// --catalogue FILE replaces the built-in catalogue with a JSON one (tests, private mirrors).
// Errors are one line on stderr and exit status 1 (a usage error: exit status 2). See docs/datasets.md.
// Deliberately does not: fetch enwik8/text8, or delete or repair a dataset folder already there.
#include <csignal>
#include <filesystem>

#include "apps/common/options.h"
#include "datasets/data_dir.h"
#include "datasets/fetch/catalogue.h"
#include "datasets/fetch/fetch.h"
#include "datasets/fetch/verify.h"
#include "tensor/error.h"

using namespace posgrad;
using namespace posgrad::apps;
using namespace posgrad::fetch;
namespace fs = std::filesystem;

namespace {

// The folder the apps would read, else ../shared/data (which fetch creates).
fs::path default_data_dir() {
  if (auto dir = try_find_data_dir()) return *dir;
  return data_dir_candidates().front();
}

int list(const std::vector<DatasetSpec>& catalogue) {
  for (const auto& d : catalogue) {
    fmt::print("{:<16} -> {}/   {}\n", d.name, d.folder, fmt::join(d.base_urls, "  "));
    for (const auto& f : d.files) fmt::print("{:<16}    {}  {} {}\n", "", f.name, digest_name(f.digest), f.expected);
  }
  return 0;
}

int verify(const std::vector<DatasetSpec>& catalogue, const std::vector<std::string>& names, const fs::path& dir) {
  if (!fs::is_directory(dir)) fail("verify: {}: no such folder", dir.string());
  std::vector<const DatasetSpec*> specs;
  if (names.empty())
    for (const auto& d : catalogue) specs.push_back(&d);
  else
    for (const auto& n : names) specs.push_back(&find_dataset(catalogue, n));
  int bad = 0, good = 0, present = 0;
  for (const DatasetSpec* spec : specs) {
    const DatasetCheck check = verify_dataset(*spec, dir);
    if (!check.present) {
      fmt::print("{:<16} not there ({}/{} missing): {}\n", spec->name, dir.string(), spec->folder,
                 fetch_command(spec->name, dir.string()));
      if (!names.empty()) ++bad;  // asked for by name: its absence is a failure
      continue;
    }
    ++present;
    for (const auto& f : check.files) {
      if (!f.checked)
        fmt::print("{:<16} {}: not checked (no known checksum)\n", spec->name, f.path);
      else if (f.problem.empty())
        fmt::print("{:<16} {}: OK\n", spec->name, f.path), ++good;
      else
        fmt::print("{:<16} {}: FAILED: {}\n", spec->name, f.path, f.problem), ++bad;
    }
  }
  std::fflush(stdout);
  if (present == 0 && names.empty()) fail("verify: no dataset folder in {}", dir.string());
  if (bad > 0) {
    fmt::print(stderr, "posgrad-data: verify: {} problem{} in {}; fetch the dataset again into an empty folder\n",
               bad, bad == 1 ? "" : "s", dir.string());
    return 1;
  }
  fmt::print("verify: {} file{} OK in {}\n", good, good == 1 ? "" : "s", dir.string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit makes write() fail with EFBIG (reported with the file) instead of a signal.
  std::signal(SIGXFSZ, SIG_IGN);
  CommandLine cli("posgrad-data", "posgrad-data: fetch and verify the datasets (cifar10, mnist, tinyshakespeare)");
  cli.require_command();
  std::string catalogue_file;
  cli.options().existing_file("--catalogue", catalogue_file,
                              "a JSON catalogue replacing the built-in one (tests, private mirrors; docs/datasets.md)");
  // An empty --dir or --base-url would silently mean "the default": refused instead (a path option).
  std::vector<std::string> fetch_names, verify_names;
  std::string dir, base_url;
  bool quiet = false;
  cli.command("fetch", "download, check and unpack datasets into the data folder")
      .texts("names", fetch_names, "datasets to fetch (see `list`)", /*required=*/true)
      .path("--dir", dir, "the data folder (default: the one the apps find, else ../shared/data)")
      .non_empty_text("--base-url", base_url, "replaces everything before the file name of every URL (a mirror; http:// only here)")
      .flag("--quiet", quiet, "no progress, only the result lines and errors");
  cli.command("verify", "check the data folder's files against the known SHA-256s")
      .texts("names", verify_names, "datasets to check (default: every one that is there)")
      .path("--dir", dir, "the data folder (default: the one the apps find)");
  cli.command("list", "the datasets, their folders, URLs and published checksums");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  try {
    const std::vector<DatasetSpec> catalogue =
        catalogue_file.empty() ? builtin_catalogue() : load_catalogue(catalogue_file);
    if (cli.got("list")) return list(catalogue);
    if (cli.got("verify")) return verify(catalogue, verify_names, dir.empty() ? find_data_dir() : fs::path(dir));
    FetchOptions options;
    options.data_dir = dir.empty() ? default_data_dir() : fs::path(dir);
    options.base_url = base_url;
    if (quiet) options.log = nullptr;
    for (const auto& name : fetch_names) find_dataset(catalogue, name);  // every name known before any download
    for (const auto& name : fetch_names) fmt::print("{}\n", fetch_dataset(find_dataset(catalogue, name), options));
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "posgrad-data: error: {}\n", e.what());
    return 1;
  }
}

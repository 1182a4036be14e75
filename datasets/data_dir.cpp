// Data folder lookup (see data_dir.h).
#include "datasets/data_dir.h"

#include <cstdlib>

#include "tensor/error.h"

namespace posgrad {

namespace fs = std::filesystem;

namespace {
bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

fs::path normal(const fs::path& p) { return p.lexically_normal(); }

std::optional<fs::path> repo_root_above(fs::path dir) {
  while (!dir.empty()) {
    std::error_code ec;
    if (fs::exists(dir / "posgrad.h", ec) && is_dir(dir / "datasets")) return dir;
    const fs::path parent = dir.parent_path();
    if (parent == dir) break;
    dir = parent;
  }
  return std::nullopt;
}

// The repository this file was compiled from: __FILE__ is <root>/datasets/data_dir.cpp when the
// build passes absolute paths (CMake does).
std::optional<fs::path> source_root() {
  const fs::path here(__FILE__);
  if (!here.is_absolute()) return std::nullopt;
  return here.parent_path().parent_path();
}

std::optional<fs::path> explicit_dir(const std::string& configured) {
  if (!configured.empty()) {
    if (!is_dir(configured)) fail("data folder {}: no such directory (given in the configuration)", configured);
    return normal(fs::absolute(configured));
  }
  const char* env = std::getenv(kDataDirEnv);
  if (env != nullptr && *env != '\0') {
    if (!is_dir(env)) fail("{}={}: no such directory", kDataDirEnv, env);
    return normal(fs::absolute(env));
  }
  return std::nullopt;
}

bool automatic_search_on() {
  const char* env = std::getenv(kDataSearchEnv);
  if (env == nullptr || *env == '\0' || std::string(env) == "on") return true;
  if (std::string(env) == "off") return false;
  fail("{}={}: expected on or off", kDataSearchEnv, env);
}
}  // namespace

std::vector<fs::path> data_dir_candidates() {
  std::vector<fs::path> out;
  if (!automatic_search_on()) return out;
  const auto add = [&](const fs::path& p) {
    const fs::path n = normal(p);
    for (const auto& q : out)
      if (q == n) return;
    out.push_back(n);
  };
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    add(cwd / ".." / "shared" / "data");
    if (auto root = repo_root_above(cwd)) add(*root / ".." / "shared" / "data");
  }
  if (auto root = source_root()) add(*root / ".." / "shared" / "data");
  return out;
}

std::optional<fs::path> try_find_data_dir(const std::string& configured) {
  if (auto dir = explicit_dir(configured)) return dir;
  for (const auto& candidate : data_dir_candidates())
    if (is_dir(candidate)) return candidate;
  return std::nullopt;
}

std::string fetch_command(const std::string& dataset, const std::string& configured) {
  std::string dir = configured;
  const char* env = std::getenv(kDataDirEnv);
  if (dir.empty() && env != nullptr) dir = env;
  if (dir.empty()) {
    std::optional<fs::path> found;
    try {
      found = try_find_data_dir();
    } catch (const Error&) {
    }
    dir = found ? found->string() : (fs::path("..") / "shared" / "data").string();
  }
  std::error_code ec;
  fs::path program = fs::read_symlink("/proc/self/exe", ec).parent_path() / "posgrad-data";
  const fs::path cwd = fs::current_path(ec);
  if (!program.is_absolute() || !fs::exists(program, ec)) {
    program = fs::path("build") / "bin" / "posgrad-data";
  } else if (!ec) {
    const fs::path relative = program.lexically_relative(cwd);
    if (!relative.empty() && *relative.begin() != "..") program = relative;
  }
  return fmt::format("{} fetch {} --dir {}", program.string(), dataset, dir);
}

fs::path find_data_file(const fs::path& relative, const std::string& configured) {
  const std::string first = relative.empty() ? "" : relative.begin()->string();
  const bool fetchable = first == "cifar10" || first == "mnist" || first == "tinyshakespeare";
  if (!fetchable) return find_data_dir(configured) / relative;
  fs::path file;
  try {
    file = find_data_dir(configured) / relative;
  } catch (const Error& e) {
    fail("{}; fetch the data with: {}", e.what(), fetch_command(first, configured));
  }
  std::error_code ec;
  if (!fs::exists(file, ec))
    fail("{}: file not found; fetch it with: {}", file.string(),
         fetch_command(first, file.parent_path().parent_path().string()));
  return file;
}

fs::path find_data_dir(const std::string& configured) {
  if (auto dir = try_find_data_dir(configured)) return *dir;
  std::string looked;
  for (const auto& candidate : data_dir_candidates()) looked += "\n  " + candidate.string();
  if (!automatic_search_on()) looked += fmt::format("\n  nowhere ({}=off)", kDataSearchEnv);
  fail("data folder not found; looked in:{}\nset {} (or the app's data_dir setting) to the folder "
       "that holds mnist/, cifar10/, tinyshakespeare/",
       looked, kDataDirEnv);
}

}  // namespace posgrad

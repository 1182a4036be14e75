// Where the datasets live. The project keeps them in `../shared/data` beside the repository;
// users point elsewhere with an explicit folder (a flag or config key) or POSGRAD_DATA_DIR.
// Lookup order, first match wins:
//   1. `configured` (when non-empty): must exist, else an Error.
//   2. the environment variable POSGRAD_DATA_DIR (when set and non-empty): must exist, else an Error.
//   3. <current directory>/../shared/data
//   4. <repo root>/../shared/data, the repo root being the nearest ancestor of the current
//      directory that holds posgrad.h and datasets/ (so any build folder inside the repo works)
//   5. <the source tree this library was built from>/../shared/data (so a build folder outside
//      the repo works too)
// When nothing matches, the Error lists every place it looked.
// fetch_command() spells the posgrad-data command that fetches a dataset into the folder the
// lookup would use, for the apps' messages when data is missing; find_data_file() uses it.
// POSGRAD_DATA_SEARCH=off in the environment skips steps 3-5, as if no data lay beside the
// repository (the tests use it to check that everything passes without data); "on" or unset
// searches them, and any other value is an Error.
// This file deliberately knows no dataset layouts (mnist/, cifar10/, ... are the loaders' business).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace posgrad {

inline constexpr const char* kDataDirEnv = "POSGRAD_DATA_DIR";
inline constexpr const char* kDataSearchEnv = "POSGRAD_DATA_SEARCH";

std::filesystem::path find_data_dir(const std::string& configured = "");
// The same, but nullopt instead of an Error when nothing is found (tests that skip without data).
// A `configured` folder or POSGRAD_DATA_DIR that does not exist is still an Error.
std::optional<std::filesystem::path> try_find_data_dir(const std::string& configured = "");
// The automatic candidates (steps 3-5), in order, for messages and docs; none when
// POSGRAD_DATA_SEARCH=off.
std::vector<std::filesystem::path> data_dir_candidates();

// "build/bin/posgrad-data fetch <dataset> --dir <folder>": the posgrad-data beside the running
// program (relative to the current directory when below it), and as folder `configured`, else
// $POSGRAD_DATA_DIR, else the data folder found, else ../shared/data (the first place looked).
std::string fetch_command(const std::string& dataset, const std::string& configured = "");

// find_data_dir(configured) / relative. When `relative` starts with the folder of a dataset that
// posgrad-data fetches (cifar10/, mnist/, tinyshakespeare/) and the data folder is not found or
// the file is not in it, the Error says so and names the fetch command. Other files are returned
// unchecked (their reader reports them).
std::filesystem::path find_data_file(const std::filesystem::path& relative, const std::string& configured = "");

}  // namespace posgrad

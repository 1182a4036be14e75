// Fetching one dataset of the catalogue into a data folder, so that a partial result never looks
// complete: files are downloaded into <data>/.posgrad-data/<name>/ (as .part files while they
// arrive, resumed by a later run), each is checked against its published checksum, archives are
// unpacked there, every unpacked file is checked against its known SHA-256, and only then is the
// finished folder renamed to <data>/<folder> in one step. Any failure removes what this run
// wrote, except a download's .part that a rerun can resume (and a complete, checked download that
// a killed run left in the staging folder is used again). A dataset folder that is already there
// is verified and left alone (a bad one is an Error that says to move it away). A second fetch of
// the same dataset into the same folder while one runs stops at once (a flock on the staging folder).
// This file deliberately parses no command line (apps/posgrad-data does).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "datasets/fetch/catalogue.h"
#include "datasets/fetch/download.h"

namespace posgrad::fetch {

struct FetchOptions {
  std::filesystem::path data_dir;
  std::string base_url;       // non-empty: replaces everything before the file name of every URL
  std::FILE* log = stderr;    // progress and steps; nullptr: quiet
  DownloadOptions download;   // timeouts and attempts (allow_plain_http and max_bytes are set here)
};

// Returns the line to print when done ("tinyshakespeare: 1 file in D/tinyshakespeare, verified").
std::string fetch_dataset(const DatasetSpec& spec, const FetchOptions& options);

// The staging folder of a dataset: <data_dir>/.posgrad-data/<name>
std::filesystem::path staging_dir(const std::filesystem::path& data_dir, const std::string& name);

}  // namespace posgrad::fetch

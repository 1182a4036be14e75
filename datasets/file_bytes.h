// Reading a whole data file into memory, with errors that name the file.
// `read_data_file` reads gzip-compressed files (.gz, detected from the content by zlib) and
// plain files alike, so every loader accepts both the published .gz and an unpacked copy.
// This file deliberately does not parse any format (see idx.h, cifar10.h, char_corpus.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace posgrad {

// All bytes of `path`, decompressed when it is gzip data. Missing file, a directory, unreadable
// or corrupt/truncated gzip data are Errors naming the path.
std::vector<uint8_t> read_data_file(const std::filesystem::path& path);

// Error unless `path` names an existing regular file ("<path>: file not found", ...).
void require_file(const std::filesystem::path& path);

}  // namespace posgrad

// Whole-file I/O with the guarantees checkpoints need.
//
// write_file_atomically(path, bytes): writes `<path>.tmp.<pid>` in the same directory, flushes
// and fsyncs it, renames it over `path`, then fsyncs the directory. A reader (or a crash) sees
// either the complete old file or the complete new one, never a mix: the old file stays intact
// until the rename. On any failure the temporary file is removed and posgrad::Error is thrown
// naming the path and the system's error text. The parent directory must exist.
//
// read_file_bytes(path): the whole file, or an Error naming the path and the system error.
//
// Deliberately not here: creating directories, locking, keeping backups, streaming writes
// (callers build the bytes in memory; our checkpoints are small enough), and two writers of the
// same path from one process at the same time (they would share the temporary name).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace posgrad {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

std::string read_file_bytes(const std::filesystem::path& path);

}  // namespace posgrad

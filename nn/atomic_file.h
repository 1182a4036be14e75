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
// sync_directory(dir): fsyncs a directory, so that a rename or a new entry in it survives a
// power loss (write_file_atomically does this for its own file). Filesystems that cannot fsync a
// directory (EINVAL) are not an error; anything else throws naming the directory.
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

void sync_directory(const std::filesystem::path& dir);

}  // namespace posgrad

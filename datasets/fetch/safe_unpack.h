// Unpacking a .tar.gz archive with libarchive into a fresh folder so that no entry can land
// outside it: absolute names, `..` components, links whose target leaves the folder, hard links,
// device files and FIFOs are refused, and so is an entry larger than a cap. Only the entries under
// one top folder of the archive are wanted (`cifar-10-batches-bin/...`); anything else is refused.
// A failed unpack removes what it wrote. Errors are one line naming the archive and the entry.
// This file deliberately checks no checksums and does not move the result into place (fetch.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace posgrad::fetch {

// Unpacks the contents of `top_folder/` in `archive` into `into` (created; must not exist).
void unpack_tar_gz(const std::filesystem::path& archive, const std::string& top_folder,
                   const std::filesystem::path& into, int64_t max_entry_bytes);

}  // namespace posgrad::fetch

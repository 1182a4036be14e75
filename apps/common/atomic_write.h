// atomic_write: replace a file's contents all at once (write `path.tmp.<pid>`, flush, fsync,
// rename over `path`), so a reader or a crash never sees a half-written config, summary or
// figure. Used by the app kit for text and PNG bytes.
// Deliberately does not: lock, keep backups, or serve checkpoints (nn/ has its own writer for
// those; the two may be merged later).
#pragma once

#include <filesystem>
#include <string_view>

namespace posgrad::apps {

// Writes `bytes` to `path` atomically. Creates missing parent folders. Throws posgrad::Error
// naming the path and the system error on failure; the temporary file is removed then.
void atomic_write_text(const std::filesystem::path& path, std::string_view bytes);

}  // namespace posgrad::apps

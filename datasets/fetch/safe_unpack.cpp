// libarchive reads the archive (gzip filter, tar formats); this file writes every entry itself,
// after checking its name, type and size, so that nothing is created outside the target folder.
#include "datasets/fetch/safe_unpack.h"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>

#include "tensor/error.h"

namespace posgrad::fetch {

namespace fs = std::filesystem;

namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

// The entry's path below top_folder, or an Error saying why the name is refused. An empty result
// is the top folder itself.
fs::path inner_path(const std::string& raw, const std::string& top_folder, const fs::path& archive) {
  std::string name = raw;
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  if (name.empty()) return {};
  const fs::path p(name);
  if (p.is_absolute()) fail("{}: entry \"{}\" has an absolute name; refused", archive.string(), raw);
  for (const auto& part : p)
    if (part == "..") fail("{}: entry \"{}\" climbs out with '..'; refused", archive.string(), raw);
  auto it = p.begin();
  if (it == p.end() || *it != top_folder)
    fail("{}: entry \"{}\" is not inside {}/; refused", archive.string(), raw, top_folder);
  fs::path rest;
  for (++it; it != p.end(); ++it)
    if (!it->empty()) rest /= *it;
  return rest;
}

// Whether a symbolic link at `inner` (relative to the folder) pointing at `target` stays inside.
// `..` may only lead the target: after a name it could climb out of a folder that is itself a
// link elsewhere (a/link/../..), which the lexical check cannot see. The link's own folder holds
// no links (checked by the caller), so leading `..`s climb real folders.
bool link_stays_inside(const fs::path& inner, const std::string& target) {
  const fs::path t(target);
  if (t.empty() || t.is_absolute()) return false;
  bool named = false;
  for (const auto& part : t) {
    if (part == "..") {
      if (named) return false;
    } else if (!part.empty() && part != ".") {
      named = true;
    }
  }
  const fs::path resolved = (inner.parent_path() / t).lexically_normal();
  return !resolved.empty() && *resolved.begin() != ".." && resolved != ".";
}

void write_entry_data(archive* a, const fs::path& out_path, const fs::path& archive_path, const std::string& name,
                      int64_t max_entry_bytes) {
  FILE* out = std::fopen(out_path.c_str(), "wb");
  if (out == nullptr) fail("cannot write entry \"{}\" to {}: {}", name, out_path.string(), std::strerror(errno));
  int64_t total = 0;
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  std::string problem;
  for (;;) {
    const int r = archive_read_data_block(a, &block, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      problem = fmt::format("{}: entry \"{}\" is corrupt ({})", archive_path.string(), name,
                            archive_error_string(a));
      break;
    }
    total = static_cast<int64_t>(offset) + static_cast<int64_t>(size);
    if (total > max_entry_bytes) {
      problem = fmt::format("{}: entry \"{}\" is larger than its cap of {} bytes; refused", archive_path.string(),
                            name, max_entry_bytes);
      break;
    }
    if (std::fseek(out, static_cast<long>(offset), SEEK_SET) != 0 || std::fwrite(block, 1, size, out) != size) {
      problem = fmt::format("cannot write entry \"{}\": {}; free some space (or raise the file-size limit) and rerun",
                            name, std::strerror(errno));
      break;
    }
  }
  if (std::fclose(out) != 0 && problem.empty())
    problem = fmt::format("cannot write entry \"{}\": {}; free some space (or raise the file-size limit) and rerun",
                          name, std::strerror(errno));
  if (!problem.empty()) throw Error(problem);
}

void unpack_into(const fs::path& archive_path, const std::string& top_folder, const fs::path& into,
                 int64_t max_entry_bytes) {
  std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
  if (!a) fail("libarchive could not start");
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
    fail("{}: not a readable tar.gz archive ({})", archive_path.string(), archive_error_string(a.get()));
  bool saw_top = false;
  for (;;) {
    archive_entry* entry = nullptr;
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN)
      fail("{}: not a readable tar.gz archive ({})", archive_path.string(), archive_error_string(a.get()));
    const char* raw_name = archive_entry_pathname(entry);
    const std::string name = raw_name != nullptr ? raw_name : "";
    const fs::path inner = inner_path(name, top_folder, archive_path);
    saw_top = true;
    const fs::path out = inner.empty() ? into : into / inner;
    if (archive_entry_hardlink(entry) != nullptr)
      fail("{}: entry \"{}\" is a hard link; refused", archive_path.string(), name);
    // Nothing is made through a link an earlier entry made (it could point anywhere it likes).
    std::error_code ec;
    fs::path folder = into;
    for (auto part = inner.begin(); part != inner.end() && std::next(part) != inner.end(); ++part)
      if (fs::is_symlink(folder /= *part, ec))
        fail("{}: entry \"{}\" is inside a link; refused", archive_path.string(), name);
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) {
      if (fs::is_symlink(out, ec)) fail("{}: entry \"{}\" is a folder over a link; refused", archive_path.string(), name);
      fs::create_directories(out);
      continue;
    }
    if (inner.empty()) fail("{}: entry \"{}\" should be a folder; refused", archive_path.string(), name);
    // A name seen twice would write through, or replace, what an earlier entry made.
    if (fs::exists(fs::symlink_status(out, ec)))
      fail("{}: entry \"{}\" appears twice; refused", archive_path.string(), name);
    fs::create_directories(out.parent_path());
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      const std::string t = target != nullptr ? target : "";
      if (!link_stays_inside(inner, t))
        fail("{}: entry \"{}\" is a link to \"{}\", outside the folder; refused", archive_path.string(), name, t);
      fs::create_symlink(t, out);
      continue;
    }
    if (type != AE_IFREG)
      fail("{}: entry \"{}\" is not a regular file, folder or link; refused", archive_path.string(), name);
    if (archive_entry_size_is_set(entry) && archive_entry_size(entry) > max_entry_bytes)
      fail("{}: entry \"{}\" is larger than its cap of {} bytes; refused", archive_path.string(), name,
           max_entry_bytes);
    write_entry_data(a.get(), out, archive_path, name, max_entry_bytes);
  }
  if (!saw_top) fail("{}: the archive holds nothing under {}/", archive_path.string(), top_folder);
}

}  // namespace

void unpack_tar_gz(const fs::path& archive, const std::string& top_folder, const fs::path& into,
                   int64_t max_entry_bytes) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(into, ec))) fail("{}: already exists; refusing to unpack over it", into.string());
  fs::create_directories(into);
  try {
    unpack_into(archive, top_folder, into, max_entry_bytes);
  } catch (...) {
    fs::remove_all(into, ec);
    throw;
  }
}

}  // namespace posgrad::fetch

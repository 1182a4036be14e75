// Builds .tar.gz archives in memory for the fetch tests with libarchive's writer, including the
// entries a safe unpacker must refuse (names with `..`, absolute names, links out of the folder).
// Deliberately only what those tests need: regular files, folders and symbolic links.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <boost/test/unit_test.hpp>
#include <string>

namespace posgrad::test {

class TarGzWriter {
 public:
  TarGzWriter() : a_(archive_write_new()) {
    archive_write_add_filter_gzip(a_);
    archive_write_set_format_pax_restricted(a_);
    archive_write_set_bytes_in_last_block(a_, 1);
    BOOST_REQUIRE(archive_write_open(a_, this, nullptr, &TarGzWriter::on_write, nullptr) == ARCHIVE_OK);
  }
  ~TarGzWriter() {
    if (a_ != nullptr) archive_write_free(a_);
  }
  TarGzWriter(const TarGzWriter&) = delete;
  TarGzWriter& operator=(const TarGzWriter&) = delete;

  TarGzWriter& file(const std::string& name, const std::string& contents) {
    archive_entry* e = entry(name, AE_IFREG, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(contents.size()));
    BOOST_REQUIRE(archive_write_header(a_, e) == ARCHIVE_OK);
    BOOST_REQUIRE(archive_write_data(a_, contents.data(), contents.size()) == static_cast<la_ssize_t>(contents.size()));
    archive_entry_free(e);
    return *this;
  }
  TarGzWriter& folder(const std::string& name) {
    archive_entry* e = entry(name, AE_IFDIR, 0755);
    BOOST_REQUIRE(archive_write_header(a_, e) == ARCHIVE_OK);
    archive_entry_free(e);
    return *this;
  }
  TarGzWriter& symlink(const std::string& name, const std::string& target) {
    archive_entry* e = entry(name, AE_IFLNK, 0777);
    archive_entry_set_symlink(e, target.c_str());
    BOOST_REQUIRE(archive_write_header(a_, e) == ARCHIVE_OK);
    archive_entry_free(e);
    return *this;
  }
  // The finished archive's bytes (the writer is then spent).
  std::string finish() {
    BOOST_REQUIRE(archive_write_close(a_) == ARCHIVE_OK);
    archive_write_free(a_);
    a_ = nullptr;
    return bytes_;
  }

 private:
  static la_ssize_t on_write(archive*, void* self, const void* data, size_t n) {
    static_cast<TarGzWriter*>(self)->bytes_.append(static_cast<const char*>(data), n);
    return static_cast<la_ssize_t>(n);
  }
  static archive_entry* entry(const std::string& name, unsigned type, int mode) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, mode);
    return e;
  }
  archive* a_;
  std::string bytes_;
};

}  // namespace posgrad::test

// read_data_file via zlib's gzread, which passes non-gzip files through unchanged.
#include "datasets/file_bytes.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tensor/error.h"

namespace posgrad {

namespace {
// zlib's message, without the "<path>: " prefix gzerror puts in front of it.
std::string zlib_message(gzFile file, const std::filesystem::path& path, int* code) {
  std::string message = gzerror(file, code);
  const std::string prefix = path.string() + ": ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return message;
}
}  // namespace

void require_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) fail("{}: file not found", path.string());
  if (std::filesystem::is_directory(status)) fail("{}: is a directory, expected a file", path.string());
}

std::vector<uint8_t> read_data_file(const std::filesystem::path& path) {
  require_file(path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    fail("{}: cannot open ({})", path.string(), errno != 0 ? std::strerror(errno) : "out of memory");
  gzbuffer(file, 1 << 17);
  std::vector<uint8_t> bytes;
  std::error_code ec;
  const auto on_disk = std::filesystem::file_size(path, ec);
  if (!ec) bytes.reserve(static_cast<size_t>(on_disk));
  // 64 KiB: each step zero-fills a chunk before gzread writes it, so a larger one costs a small
  // file (a label file, a fuzz input) a 1 MiB memset; the vector still grows geometrically.
  constexpr unsigned kChunk = 1u << 16;
  while (true) {
    const size_t old = bytes.size();
    bytes.resize(old + kChunk);
    const int got = gzread(file, bytes.data() + old, kChunk);
    if (got < 0) {
      int code = 0;
      const std::string message = zlib_message(file, path, &code);
      gzclose(file);
      fail("{}: corrupt or truncated gzip data after {} bytes ({})", path.string(), old, message);
    }
    bytes.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
  }
  // A gzip stream cut short can end without a read error; gzclose_r then reports it.
  int code = 0;
  const std::string message = zlib_message(file, path, &code);
  const int closed = gzclose(file);
  if (code != Z_OK && code != Z_STREAM_END)
    fail("{}: corrupt or truncated gzip data after {} bytes ({})", path.string(), bytes.size(), message);
  if (closed != Z_OK && closed != Z_BUF_ERROR)
    fail("{}: error while closing (zlib code {})", path.string(), closed);
  if (closed == Z_BUF_ERROR)
    fail("{}: truncated gzip data: the stream ends early after {} bytes", path.string(), bytes.size());
  return bytes;
}

}  // namespace posgrad

// IDX parsing (see idx.h).
#include "datasets/idx.h"

#include <algorithm>

#include "datasets/file_bytes.h"
#include "tensor/error.h"

namespace posgrad {

namespace {
uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
}  // namespace

IdxArray parse_idx(const std::vector<uint8_t>& bytes, uint32_t expected_magic, std::string_view what,
                   std::string_view name) {
  const size_t expected_dims = expected_magic & 0xFF;
  if (bytes.size() < 4)
    fail("{}: truncated header: {} bytes, an IDX file starts with a 4-byte magic number", name,
         bytes.size());
  const uint32_t magic = read_be32(bytes.data());
  if (magic != expected_magic) {
    if ((magic >> 16) == 0 && ((magic >> 8) & 0xFF) != 0x08 && (magic & 0xFF) == expected_dims)
      fail("{}: IDX element type 0x{:02x} is not supported (only unsigned byte, 0x08)", name,
           (magic >> 8) & 0xFF);
    fail("{}: wrong magic number 0x{:08x}, expected 0x{:08x} (an unsigned-byte IDX file with {} "
         "dimension{})",
         name, magic, expected_magic, expected_dims, expected_dims == 1 ? "" : "s");
  }
  const size_t header = 4 + 4 * expected_dims;
  if (bytes.size() < header)
    fail("{}: truncated header: {} bytes, expected {} (magic and {} dimension size{})", name,
         bytes.size(), header, expected_dims, expected_dims == 1 ? "" : "s");
  IdxArray out;
  uint64_t count = 1, extent = 1;  // extent: the product with zero sizes counted as 1
  for (size_t d = 0; d < expected_dims; ++d) {
    const uint32_t size = read_be32(bytes.data() + 4 + 4 * d);
    out.dims.push_back(size);
    count *= size;  // at most 3 factors below 2^32 each: checked against the file size below
    // A zero size makes count 0 whatever the others claim, but the tensor's strides still
    // multiply them: [0, 2^31, 2^31] must be refused too.
    extent *= std::max<uint64_t>(size, 1);
    if (count > (uint64_t{1} << 40) || extent > (uint64_t{1} << 40))
      fail("{}: header claims an impossible size ({})", name, fmt::join(out.dims, " x "));
  }
  const uint64_t payload = bytes.size() - header;
  if (payload < count)
    fail("{}: truncated data: expected {} bytes of {}, file has {}", name, count, what, payload);
  if (payload > count)
    fail("{}: wrong size: expected {} bytes of {} after the {}-byte header, file has {} ({} extra)",
         name, count, what, header, payload, payload - count);
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

IdxArray read_idx(const std::filesystem::path& path, uint32_t expected_magic, std::string_view what) {
  return parse_idx(read_data_file(path), expected_magic, what, path.string());
}

}  // namespace posgrad

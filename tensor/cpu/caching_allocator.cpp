// The caching host allocator (see caching_allocator.h): size classes, one free list per class,
// aligned_alloc only on a miss, a cap on cached bytes, and one empty-the-cache-and-retry when the
// system refuses memory.
#include "tensor/cpu/caching_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "tensor/error.h"

namespace posgrad {

namespace {

constexpr size_t kAlignment = 64;                    // Storage's promise (a cache line, an AVX-512 vector)
constexpr size_t kFineLimit = 4096;                  // up to here: multiples of 64 bytes
constexpr size_t kLargestRequest = size_t{1} << 60;  // beyond: refused before any rounding overflows

size_t default_cache_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return size_t{8} << 30;  // unknown: 8 GiB
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 2;
}

struct HostPool {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_lists;  // size class -> free blocks (reused last-in first-out)
  CpuMemoryStats stats;
  size_t limit = 0;
  bool poison = false;

  HostPool() {
    const char* limit_text = std::getenv("POSGRAD_CPU_CACHE_LIMIT");
    limit = default_cache_limit();
    if (limit_text && *limit_text) {
      try {
        limit = cpu::parse_byte_size(limit_text);
      } catch (const Error& e) {
        fail("environment variable POSGRAD_CPU_CACHE_LIMIT: {}", e.what());
      }
    }
    const char* poison_text = std::getenv("POSGRAD_CPU_ALLOC_POISON");
    poison = poison_text && *poison_text && std::strcmp(poison_text, "0") != 0;
  }

  // Gives cached blocks back to the system, largest class first, until at most `keep` bytes stay
  // cached. The caller holds the mutex.
  void trim_to(size_t keep) {
    for (auto it = free_lists.rbegin(); it != free_lists.rend(); ++it) {
      auto& [bytes, blocks] = *it;
      while (!blocks.empty() && static_cast<size_t>(stats.bytes_cached) > keep) {
        std::free(blocks.back());
        blocks.pop_back();
        stats.system_frees += 1;
        stats.blocks_cached -= 1;
        stats.bytes_cached -= static_cast<int64_t>(bytes);
      }
    }
    std::erase_if(free_lists, [](const auto& entry) { return entry.second.empty(); });
  }
};

// Never destroyed: Storage destructors may run during static destruction.
HostPool& pool() {
  static auto* p = new HostPool();
  return *p;
}

}  // namespace

namespace cpu {

size_t size_class(size_t nbytes) {
  if (nbytes <= kFineLimit) return (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  size_t pow2 = kFineLimit;
  while (pow2 * 2 < nbytes) pow2 *= 2;  // pow2 < nbytes <= 2 * pow2
  const size_t step = pow2 / 4;         // classes pow2 * {5/4, 6/4, 7/4, 8/4}
  return (nbytes + step - 1) / step * step;
}

size_t parse_byte_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") shift = 30;
  if (digits == 0 || digits > 15 || shift < 0)
    fail("'{}' is not a byte size: expected a number of bytes with an optional suffix K, M or G "
         "(powers of 1024), e.g. 8G or 512M", text);
  return std::stoull(text.substr(0, digits)) << shift;
}

void* cached_allocate(size_t nbytes) {
  if (nbytes > kLargestRequest) fail("out of host memory: {} bytes requested", nbytes);
  const size_t bytes = size_class(nbytes);
  HostPool& p = pool();
  void* block = nullptr;
  bool poison = false;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    poison = p.poison;
    auto it = p.free_lists.find(bytes);
    if (it != p.free_lists.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      p.stats.cache_hits += 1;
      p.stats.blocks_cached -= 1;
      p.stats.bytes_cached -= static_cast<int64_t>(bytes);
    } else {
      block = std::aligned_alloc(kAlignment, bytes);
      if (!block && p.stats.bytes_cached > 0) {  // give the cache back to the system, try once more
        p.trim_to(0);
        block = std::aligned_alloc(kAlignment, bytes);
      }
      if (!block)
        fail("out of host memory allocating {} bytes ({} bytes in use by tensors, the cache "
             "already emptied)", nbytes, p.stats.bytes_in_use);
      p.stats.system_allocs += 1;
    }
    p.stats.bytes_in_use += static_cast<int64_t>(bytes);
    p.stats.peak_bytes_in_use = std::max(p.stats.peak_bytes_in_use, p.stats.bytes_in_use);
  }
  if (poison) std::memset(block, 0xFF, nbytes);
  return block;
}

void cached_release(void* block, size_t nbytes) noexcept {
  if (!block) return;
  const size_t bytes = size_class(nbytes);
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.stats.bytes_in_use -= static_cast<int64_t>(bytes);
  if (static_cast<size_t>(p.stats.bytes_cached) + bytes > p.limit) {
    std::free(block);  // caching it would overflow the cap
    p.stats.system_frees += 1;
    return;
  }
  try {
    p.free_lists[bytes].push_back(block);
  } catch (const std::bad_alloc&) {  // no memory even for the list entry: give the block back
    std::free(block);
    p.stats.system_frees += 1;
    return;
  }
  p.stats.blocks_cached += 1;
  p.stats.bytes_cached += static_cast<int64_t>(bytes);
}

}  // namespace cpu

CpuMemoryStats cpu_memory_stats() {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.stats;
}

void cpu_reset_peak_memory() {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.stats.peak_bytes_in_use = p.stats.bytes_in_use;
}

void cpu_empty_cache() {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.trim_to(0);
}

void set_cpu_cache_limit(size_t bytes) {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.limit = bytes;
  p.trim_to(bytes);
}

size_t cpu_cache_limit() {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.limit;
}

void set_cpu_alloc_poison(bool on) {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.poison = on;
}

bool cpu_alloc_poison() {
  HostPool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.poison;
}

}  // namespace posgrad

// The caching host allocator: what Storage uses for CPU memory. Every op allocates its output
// afresh, and glibc hands large blocks back to the kernel at once (munmap), so without a cache
// each training step pays a page fault for every 4 KiB it touches. Here a freed block goes to a
// free list of its size class and the next request of that class gets it back, so a training
// loop in steady state makes no system allocation at all.
//
// Size classes: multiples of 64 bytes up to 4 KiB, then four classes per power of two
// (5/4, 6/4, 7/4 and 8/4 of it), as the CUDA allocator (tensor/cuda/allocator.h) does above 1 MiB.
// A request wastes at most 63 bytes or 25% of its size in address space; pages of the slack that
// nobody touches are never faulted in, so they cost no memory.
// Blocks are 64-byte aligned (the promise of Storage). One mutex guards the lists: allocations
// come from the main thread, the DataLoader's worker thread, and possibly OpenMP threads.
// The cache holds at most `cpu_cache_limit()` bytes (default: half the physical memory, or the
// environment variable POSGRAD_CPU_CACHE_LIMIT in bytes with an optional K, M or G suffix; 0
// disables caching); a freed block that would overflow it goes back to the system. When the
// system refuses an allocation, the cache is emptied and the allocation retried once.
// Deliberately not here: splitting or merging blocks, per-thread caches, returning memory to
// the system in the background, CUDA memory (tensor/cuda/allocator.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace posgrad {

// Counters of the host allocator, in size-class bytes (what the blocks really occupy).
struct CpuMemoryStats {
  int64_t system_allocs = 0;      // blocks obtained from the system so far (flat in steady state)
  int64_t system_frees = 0;       // blocks given back (cap overflow, empty_cache, failed allocation)
  int64_t cache_hits = 0;         // requests served from a free list
  int64_t bytes_in_use = 0;       // bytes handed out to live storages
  int64_t bytes_cached = 0;       // bytes in free lists, waiting for reuse
  int64_t blocks_cached = 0;      // number of such blocks
  int64_t peak_bytes_in_use = 0;  // the most bytes in use at once since start or the last reset
};
CpuMemoryStats cpu_memory_stats();
// Sets peak_bytes_in_use to the current bytes_in_use.
void cpu_reset_peak_memory();
// Gives every cached block back to the system.
void cpu_empty_cache();
// The cap on cached bytes; lowering it gives back cached blocks, largest first, until it holds.
void set_cpu_cache_limit(size_t bytes);
size_t cpu_cache_limit();
// Debugging aid: when on, every block handed out is first filled with 0xFF bytes (NaN as a float
// or double, -1 as an int64), so code that wrongly expects fresh memory to be zero fails loudly.
// Also switched on by the environment variable POSGRAD_CPU_ALLOC_POISON=1.
void set_cpu_alloc_poison(bool on);
bool cpu_alloc_poison();

namespace cpu {

// A 64-byte aligned block of at least `nbytes` (> 0) bytes; throws posgrad::Error when the
// system has no memory left even after the cache was emptied.
void* cached_allocate(size_t nbytes);
// Returns a block from cached_allocate; `nbytes` must be the size it was requested with.
void cached_release(void* block, size_t nbytes) noexcept;
// The bytes a request of `nbytes` (> 0) really occupies.
size_t size_class(size_t nbytes);
// "1073741824", "512M", "8G", "64k" -> bytes (K, M, G are powers of 1024); throws Error naming
// the text otherwise.
size_t parse_byte_size(const std::string& text);

}  // namespace cpu
}  // namespace posgrad

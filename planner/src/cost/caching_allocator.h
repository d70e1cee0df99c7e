// A model of PyTorch's CUDA caching allocator, after its public source
// (PyTorch's c10/cuda/CUDACachingAllocator.cpp; its rules in docs/planner.md):
// what torch.cuda.max_memory_allocated() and max_memory_reserved() report for a sequence of
// requests and frees. Internal to the cost model (docs/planner.md, "The allocator model");
// tests/unit/caching_allocator_test.cc checks it on hand-worked sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <set>
#include <vector>

namespace muonplan {

// The source's constants.
inline constexpr int64_t kAllocMinBlock = 512;            // kMinBlockSize: rounding, small split
inline constexpr int64_t kAllocSmallSize = 1 << 20;       // kSmallSize: small pool limit
inline constexpr int64_t kAllocSmallBuffer = 2 << 20;     // kSmallBuffer: small pool segment
inline constexpr int64_t kAllocMinLargeAlloc = 10 << 20;  // kMinLargeAlloc
inline constexpr int64_t kAllocLargeBuffer = 20 << 20;    // kLargeBuffer: shared large segment
inline constexpr int64_t kAllocRoundLarge = 2 << 20;      // kRoundLarge: own segment rounding

// PYTORCH_CUDA_ALLOC_CONF settings the model follows (defaults: the source's).
struct AllocatorConfig {
  bool expandable_segments = false;
  int64_t round_bytes = kAllocMinBlock;  // the source's 512 B; a multiple of it
  int64_t max_split_size = std::numeric_limits<int64_t>::max();  // max_split_size_mb: unlimited
  int64_t max_non_split_rounding = 20 << 20;                     // max_non_split_rounding_mb
  // Bytes the allocator may reserve (the device's free memory); 0: unlimited. When a new
  // segment (or, expandable, a page) would pass it, the model does what the source's malloc
  // does before raising OOM (release_cached_blocks, then alloc_block again): it frees every
  // cached segment with no live block, unmaps every free whole page of an expandable segment,
  // and retries; if that is not enough the memory is reserved anyway and out_of_memory() says
  // so. (release_available_cached_blocks, the step before, frees oversize blocks only: a no-op
  // at the default unlimited max_split_size, and not modelled.)
  int64_t capacity = 0;
};

// A request rounded to its block: 512 B at least, a multiple of 512 B (`round`).
int64_t allocator_round_size(int64_t bytes, int64_t round = kAllocMinBlock);
// The segment cudaMalloc'd for a rounded request that no cached block serves: 2 MiB (small
// pool), 20 MiB (1 MiB to under 10 MiB), else the request rounded up to 2 MiB.
int64_t allocator_segment_size(int64_t rounded);

class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorConfig c = {}) : cfg_(c) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  // A block for `bytes` on `stream` (each stream its own pools); returns its handle.
  int malloc(int64_t bytes, int stream);
  void free(int handle);
  // release_cached_blocks (torch.cuda.empty_cache()): frees every segment with no live block
  // and unmaps the free whole pages of expandable segments; returns the bytes given back.
  int64_t empty_cache();

  int64_t block_bytes(int handle) const { return blocks_[size_t(handle)].size; }
  // The block's address in the model's address space (the first segment starts at 0).
  int64_t block_address(int handle) const { return blocks_[size_t(handle)].ptr; }
  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  int64_t reserved_on(int stream) const;  // segments of one stream
  int segments() const;                   // live segments
  bool out_of_memory() const { return oom_; }

 private:
  // Free blocks: best fit is the first at or after (stream, pool, size); ties by address.
  struct FreeKey {
    int stream = 0, small = 0;
    int64_t size = 0, ptr = 0;
    int id = -1;
    bool operator<(const FreeKey& o) const {
      if (stream != o.stream) return stream < o.stream;
      if (small != o.small) return small < o.small;
      if (size != o.size) return size < o.size;
      if (ptr != o.ptr) return ptr < o.ptr;
      return id < o.id;
    }
  };
  using FreeSet = std::pmr::set<FreeKey>;
  struct Block {
    int64_t ptr = 0, size = 0;
    int stream = 0, segment = -1;
    int prev = -1, next = -1;  // neighbours within the segment
    bool small = false, allocated = false;
    bool mapped = true;    // false: address space of an expandable segment with no pages behind it
    bool indexed = false;  // in releasable_, at rel_at
    bool cached = false;   // in free_, at free_at
    // Where the block sits in the sets: erasing by iterator, not by key, saves a lookup per
    // erase (the key's equal_range was 7% of a replay-heavy plan's time).
    FreeSet::iterator free_at{}, rel_at{};
  };
  struct Segment {
    int stream = 0;
    bool small = false, live = true, expandable = false;
    int64_t size = 0;  // bytes mapped
  };
  FreeKey key(int id) const;
  FreeKey unmapped_key(int id) const;  // unmapped blocks: by stream, pool and address
  bool is_free(int id) const;          // a neighbour that merges: free and mapped
  int64_t expandable_size(int id) const;
  int find_free(int64_t size, int stream, bool small) const;
  bool fits(int64_t bytes) const;
  int new_segment(int64_t size, int stream, bool small, bool force);
  int find_expandable(int64_t size, int stream, bool small);
  int map_block(int id, int64_t size, bool force);
  int alloc_expandable(int64_t size, int stream, bool small, bool force);
  void unmap_block(int id);
  void take(int64_t bytes);
  void split(int id, int64_t size);
  int new_block(const Block& b);  // its handle
  void merge_into(int id, int other);
  void count_alloc(int64_t bytes);
  void cache_free(int id);  // a block joins the free set
  void uncache(int id);     // and leaves it
  bool releasable(int id) const;

  AllocatorConfig cfg_;
  std::vector<Block> blocks_;
  std::vector<int> dead_;  // slots of blocks_ no block holds (new_block reuses them)
  std::vector<Segment> segments_;
  // Its nodes come from a pool that recycles them: a step's replay makes some 50k inserts and
  // erases into a set of at most a few hundred blocks, and a heap allocation per insert (or a
  // sorted vector's shifting) was most of the planner's time, many times more under
  // AddressSanitizer. Declared before the set, so it outlives it.
  std::pmr::unsynchronized_pool_resource free_nodes_;
  FreeSet free_{&free_nodes_};
  FreeSet releasable_{&free_nodes_};  // the free blocks empty_cache gives back
  std::set<FreeKey> unmapped_;        // the source's BlockPool::unmapped
  int64_t next_ptr_ = 0;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  bool oom_ = false;
};

}  // namespace muonplan

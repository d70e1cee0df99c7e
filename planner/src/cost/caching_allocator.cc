// The caching allocator's rules as its source states them (caching_allocator.h): rounding,
// pools per stream, best fit, splitting, merging within a segment, expandable segments.
#include "cost/caching_allocator.h"

#include <algorithm>

namespace muonplan {

namespace {

int64_t ceil_to(int64_t x, int64_t step) {
  return (x + step - 1) / step * step;
}

// Expandable segments map pages of 20 MiB (large pool) or 2 MiB (small pool).
int64_t page_bytes(bool small) {
  return small ? kAllocSmallBuffer : kAllocLargeBuffer;
}

}  // namespace

int64_t allocator_round_size(int64_t bytes, int64_t round) {
  return bytes < round ? round : ceil_to(bytes, round);
}

int64_t allocator_segment_size(int64_t rounded) {
  if (rounded <= kAllocSmallSize) return kAllocSmallBuffer;
  if (rounded < kAllocMinLargeAlloc) return kAllocLargeBuffer;
  return ceil_to(rounded, kAllocRoundLarge);
}

CachingAllocator::FreeKey CachingAllocator::key(int id) const {
  const Block& b = blocks_[size_t(id)];
  return {b.stream, b.small ? 1 : 0, b.size, b.ptr, id};
}

// get_free_block: the smallest cached block of the stream's pool that holds `size`. With a
// max_split_size set, oversize blocks (>= it) serve only requests that are oversize too and
// within max_non_split_rounding of the block.
int CachingAllocator::find_free(int64_t size, int stream, bool small) const {
  auto it = free_.lower_bound({stream, small ? 1 : 0, size, 0, -1});
  if (it == free_.end() || it->stream != stream || it->small != (small ? 1 : 0)) return -1;
  const int64_t found = it->size;
  if (size < cfg_.max_split_size && found >= cfg_.max_split_size) return -1;
  if (size >= cfg_.max_split_size && found >= size + cfg_.max_non_split_rounding) return -1;
  return it->id;
}

// Reserves `bytes` of new device memory. Past the capacity, the source frees every cached
// segment without a live block and retries before raising OOM (release_cached_blocks).
bool CachingAllocator::reserve(int64_t bytes) {
  if (cfg_.capacity > 0 && reserved_ + bytes > cfg_.capacity) {
    empty_cache();
    if (reserved_ + bytes > cfg_.capacity) oom_ = true;
  }
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return !oom_;
}

// cudaMalloc of one segment holding a single free block; returns the block.
int CachingAllocator::new_segment(int64_t size, int stream, bool small) {
  reserve(size);
  const int seg = int(segments_.size());
  const int id = int(blocks_.size());
  segments_.push_back({stream, small, true, false, size, id});
  blocks_.push_back({next_ptr_, size, stream, seg, -1, -1, small, false});
  next_ptr_ += size;
  return id;
}

// Expandable segments: one segment per stream and pool, grown by mapping pages at its end
// until its free tail holds `size`; returns that tail block (not in the free set).
int CachingAllocator::grow_expandable(int64_t size, int stream, bool small) {
  int seg = -1;
  for (size_t s = 0; s < segments_.size(); ++s) {
    const Segment& g = segments_[s];
    if (g.live && g.expandable && g.stream == stream && g.small == small) seg = int(s);
  }
  if (seg < 0) {
    seg = int(segments_.size());
    segments_.push_back({stream, small, true, true, 0, -1});
    // Virtual space is reserved far ahead: each segment gets its own address range.
    next_ptr_ += int64_t(1) << 50;
  }
  Segment& g = segments_[size_t(seg)];
  int tail = g.last;
  const bool tail_free = tail >= 0 && !blocks_[size_t(tail)].allocated;
  const int64_t have = tail_free ? blocks_[size_t(tail)].size : 0;
  const int64_t map = ceil_to(size - have, page_bytes(small));
  reserve(map);
  g.size += map;
  if (tail_free) {
    free_.erase(key(tail));
    blocks_[size_t(tail)].size += map;
    return tail;
  }
  const int64_t base = tail >= 0 ? blocks_[size_t(tail)].ptr + blocks_[size_t(tail)].size
                                 : next_ptr_ - (int64_t(1) << 50);
  const int id = int(blocks_.size());
  blocks_.push_back({base, map, stream, seg, tail, -1, small, false});
  if (tail >= 0) blocks_[size_t(tail)].next = id;
  g.last = id;
  return id;
}

// should_split and the split: the block keeps the low `size` bytes, the remainder becomes a
// free block after it. Small pool: splits when at least 512 B remain; large pool: when the
// request is under max_split_size and more than 1 MiB remains (else the tail stays allocated).
void CachingAllocator::split(int id, int64_t size) {
  Block& b = blocks_[size_t(id)];
  const int64_t remaining = b.size - size;
  const bool ok = b.small ? remaining >= kAllocMinBlock
                          : size < cfg_.max_split_size && remaining > kAllocSmallSize;
  if (!ok) return;
  const int rest = int(blocks_.size());
  Block r{b.ptr + size, remaining, b.stream, b.segment, id, b.next, b.small, false};
  b.size = size;
  if (r.next >= 0) blocks_[size_t(r.next)].prev = rest;
  blocks_[size_t(id)].next = rest;
  Segment& g = segments_[size_t(r.segment)];
  if (g.last == id) g.last = rest;
  blocks_.push_back(r);
  free_.insert(key(rest));
}

void CachingAllocator::count_alloc(int64_t bytes) {
  allocated_ += bytes;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
}

int CachingAllocator::malloc(int64_t bytes, int stream) {
  const int64_t size = allocator_round_size(bytes, cfg_.round_bytes);
  const bool small = size <= kAllocSmallSize;
  int id = find_free(size, stream, small);
  if (id >= 0) {
    free_.erase(key(id));
  } else if (cfg_.expandable_segments) {
    id = grow_expandable(size, stream, small);
  } else {
    id = new_segment(allocator_segment_size(size), stream, small);
  }
  split(id, size);
  blocks_[size_t(id)].allocated = true;
  count_alloc(blocks_[size_t(id)].size);
  return id;
}

// `other` (a free neighbour in the same segment) joins block `id`.
void CachingAllocator::merge_into(int id, int other) {
  Block& b = blocks_[size_t(id)];
  Block& o = blocks_[size_t(other)];
  free_.erase(key(other));
  if (o.ptr < b.ptr) {
    b.ptr = o.ptr;
    b.prev = o.prev;
    if (b.prev >= 0) blocks_[size_t(b.prev)].next = id;
  } else {
    b.next = o.next;
    if (b.next >= 0) blocks_[size_t(b.next)].prev = id;
    Segment& g = segments_[size_t(b.segment)];
    if (g.last == other) g.last = id;
  }
  b.size += o.size;
  o.size = 0;
  o.segment = -1;
}

void CachingAllocator::free(int handle) {
  Block& b = blocks_[size_t(handle)];
  b.allocated = false;
  allocated_ -= b.size;
  const int prev = b.prev, next = b.next;
  if (prev >= 0 && !blocks_[size_t(prev)].allocated) merge_into(handle, prev);
  if (next >= 0 && !blocks_[size_t(next)].allocated) merge_into(handle, next);
  free_.insert(key(handle));
}

// A segment whose one block is free goes back (release_cached_blocks). Expandable segments
// are left mapped (the source unmaps their free pages; not modelled).
int64_t CachingAllocator::empty_cache() {
  int64_t freed = 0;
  for (auto it = free_.begin(); it != free_.end();) {
    const int id = it->id;
    const Block& b = blocks_[size_t(id)];
    Segment& g = segments_[size_t(b.segment)];
    if (!g.expandable && b.prev < 0 && b.next < 0) {
      g.live = false;
      freed += g.size;
      reserved_ -= g.size;
      it = free_.erase(it);
    } else {
      ++it;
    }
  }
  return freed;
}

int64_t CachingAllocator::reserved_on(int stream) const {
  int64_t r = 0;
  for (const Segment& g : segments_) {
    if (g.live && g.stream == stream) r += g.size;
  }
  return r;
}

int CachingAllocator::segments() const {
  return int(std::count_if(segments_.begin(), segments_.end(),
                           [](const Segment& g) { return g.live && g.size > 0; }));
}

}  // namespace muonplan

// The caching allocator's rules as its source states them (caching_allocator.h): rounding,
// pools per stream, best fit, splitting, merging within a segment, expandable segments, and
// what malloc does at the device's capacity.
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

CachingAllocator::FreeKey CachingAllocator::unmapped_key(int id) const {
  const Block& b = blocks_[size_t(id)];
  return {b.stream, b.small ? 1 : 0, 0, b.ptr, id};
}

bool CachingAllocator::is_free(int id) const {
  return id >= 0 && !blocks_[size_t(id)].allocated && blocks_[size_t(id)].mapped;
}

// The source's best fit counts a free block followed by unmapped address space as the size it
// can grow to: the end of an expandable segment is the last choice.
int64_t CachingAllocator::expandable_size(int id) const {
  const Block& b = blocks_[size_t(id)];
  const bool grows = b.next >= 0 && !blocks_[size_t(b.next)].mapped;
  return b.size + (grows ? blocks_[size_t(b.next)].size : 0);
}

// get_free_block: the smallest cached block of the stream's pool that holds `size`. With a
// max_split_size set, oversize blocks (>= it) serve only requests that are oversize too and
// within max_non_split_rounding of the block. In an expandable segment, a later block of the
// same stream and pool whose expandable size is smaller is taken instead (the source's loop).
int CachingAllocator::find_free(int64_t size, int stream, bool small) const {
  auto it = free_.lower_bound({stream, small ? 1 : 0, size, 0, -1});
  auto same = [&](auto i) {
    return i != free_.end() && i->stream == stream && i->small == (small ? 1 : 0);
  };
  if (!same(it)) return -1;
  if (segments_[size_t(blocks_[size_t(it->id)].segment)].expandable) {
    for (auto next = std::next(it);
         same(next) && expandable_size(next->id) < expandable_size(it->id); ++next)
      it = next;
  }
  const int64_t found = it->size;
  if (size < cfg_.max_split_size && found >= cfg_.max_split_size) return -1;
  if (size >= cfg_.max_split_size && found >= size + cfg_.max_non_split_rounding) return -1;
  return it->id;
}

bool CachingAllocator::fits(int64_t bytes) const {
  return cfg_.capacity <= 0 || reserved_ + bytes <= cfg_.capacity;
}

void CachingAllocator::take(int64_t bytes) {
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

// alloc_block: cudaMalloc of one segment holding a single free block; returns the block, or -1
// when it would pass the capacity (unless `force`: the allocation that runs out of memory).
int CachingAllocator::new_segment(int64_t size, int stream, bool small, bool force) {
  if (!force && !fits(size)) return -1;
  take(size);
  const int seg = int(segments_.size());
  segments_.push_back({stream, small, true, false, size});
  const int id = new_block({next_ptr_, size, stream, seg, -1, -1, small, false, true});
  next_ptr_ += size;
  cache_free(id);
  return id;
}

// find_expandable_block: the lowest-address unmapped range of the stream's pool that, with the
// free block before it and the free or unmapped blocks after it, holds `size`; else a new
// segment: address space for 1.125 x the device's memory, nothing mapped.
int CachingAllocator::find_expandable(int64_t size, int stream, bool small) {
  for (auto it = unmapped_.lower_bound({stream, small ? 1 : 0, 0, 0, -1});
       it != unmapped_.end() && it->stream == stream && it->small == (small ? 1 : 0); ++it) {
    int c = it->id;
    if (is_free(blocks_[size_t(c)].prev)) c = blocks_[size_t(c)].prev;
    int64_t bytes = 0;
    for (int b = c; bytes < size && b >= 0 && !blocks_[size_t(b)].allocated;
         b = blocks_[size_t(b)].next)
      bytes += blocks_[size_t(b)].size;
    if (bytes >= size) return c;
  }
  const int64_t page = page_bytes(small);
  const int64_t space =
      cfg_.capacity > 0 ? ceil_to(cfg_.capacity + cfg_.capacity / 8, page) : int64_t(1) << 46;
  const int seg = int(segments_.size());
  segments_.push_back({stream, small, true, true, 0});
  const int id = new_block(
      {next_ptr_, std::max(space, ceil_to(size, page)), stream, seg, -1, -1, small, false, false});
  next_ptr_ += blocks_[size_t(id)].size;
  unmapped_.insert(unmapped_key(id));
  return id;
}

// map_block: pages behind the first `size` bytes of unmapped block `id` (rounded up to whole
// pages; the rest stays unmapped after it), merged with free neighbours; returns the merged
// free block, or -1 when the pages would pass the capacity (unless `force`).
int CachingAllocator::map_block(int id, int64_t size, bool force) {
  const int64_t map = ceil_to(size, page_bytes(blocks_[size_t(id)].small));
  if (!force && !fits(map)) return -1;
  unmapped_.erase(unmapped_key(id));
  blocks_[size_t(id)].mapped = true;
  if (map < blocks_[size_t(id)].size) {
    Block r = blocks_[size_t(id)];  // unmapped: in neither free set
    r.ptr += map;
    r.size -= map;
    r.mapped = false;
    r.prev = id;
    const int rest = new_block(r);
    if (r.next >= 0) blocks_[size_t(r.next)].prev = rest;
    blocks_[size_t(id)].size = map;
    blocks_[size_t(id)].next = rest;
    unmapped_.insert(unmapped_key(rest));
  }
  take(map);
  segments_[size_t(blocks_[size_t(id)].segment)].size += map;
  const int prev = blocks_[size_t(id)].prev, next = blocks_[size_t(id)].next;
  if (is_free(prev)) merge_into(id, prev);
  if (is_free(next)) merge_into(id, next);
  cache_free(id);
  return id;
}

// try_allocate_expandable_block: map pages into the range find_expandable chose until its
// first free block holds `size`; returns that block (in the free set), or -1 past the capacity.
int CachingAllocator::alloc_expandable(int64_t size, int stream, bool small, bool force) {
  int c = find_expandable(size, stream, small);
  if (!blocks_[size_t(c)].mapped) {
    c = map_block(c, std::min(blocks_[size_t(c)].size, size), force);
    if (c < 0) return -1;
  }
  while (blocks_[size_t(c)].size < size) {
    const int next = blocks_[size_t(c)].next;
    const int64_t remaining = size - blocks_[size_t(c)].size;
    c = map_block(next, std::min(remaining, blocks_[size_t(next)].size), force);
    if (c < 0) return -1;
  }
  return c;
}

// should_split and the split: the block keeps the low `size` bytes, the remainder becomes a
// free block after it. Small pool, or any pool with expandable segments: splits when at least
// 512 B remain; large pool: when the request is under max_split_size and more than 1 MiB
// remains (else the tail stays allocated).
void CachingAllocator::split(int id, int64_t size) {
  Block& b = blocks_[size_t(id)];
  const int64_t remaining = b.size - size;
  const bool ok = b.small || cfg_.expandable_segments
                      ? remaining >= kAllocMinBlock
                      : size < cfg_.max_split_size && remaining > kAllocSmallSize;
  if (!ok) return;
  const Block r{b.ptr + size, remaining, b.stream, b.segment, id, b.next, b.small, false, true};
  b.size = size;
  const int rest = new_block(r);  // `b` may dangle from here
  if (r.next >= 0) blocks_[size_t(r.next)].prev = rest;
  blocks_[size_t(id)].next = rest;
  cache_free(rest);
}

// A block empty_cache gives back: a whole segment with no live block, or a free block of an
// expandable segment holding a whole page.
bool CachingAllocator::releasable(int id) const {
  const Block& b = blocks_[size_t(id)];
  if (!segments_[size_t(b.segment)].expandable) return b.prev < 0 && b.next < 0;
  const int64_t page = page_bytes(b.small);
  return ceil_to(b.ptr, page) < (b.ptr + b.size) / page * page;
}

void CachingAllocator::cache_free(int id) {
  const FreeKey k = key(id);
  Block& b = blocks_[size_t(id)];
  b.free_at = free_.insert(k).first;
  b.cached = true;
  if (releasable(id)) {
    b.rel_at = releasable_.insert(k).first;
    b.indexed = true;
  }
}

void CachingAllocator::uncache(int id) {
  Block& b = blocks_[size_t(id)];
  if (b.cached) {
    free_.erase(b.free_at);
    b.cached = false;
  }
  if (b.indexed) {
    releasable_.erase(b.rel_at);
    b.indexed = false;
  }
}

void CachingAllocator::count_alloc(int64_t bytes) {
  allocated_ += bytes;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
}

// malloc: a cached block, else alloc_block; past the capacity, release_cached_blocks and
// alloc_block again; if that fails too, out of memory (the model reserves it anyway).
int CachingAllocator::malloc(int64_t bytes, int stream) {
  const int64_t size = allocator_round_size(bytes, cfg_.round_bytes);
  const bool small = size <= kAllocSmallSize;
  int id = find_free(size, stream, small);
  auto alloc_block = [&](bool force) {
    return cfg_.expandable_segments
               ? alloc_expandable(size, stream, small, force)
               : new_segment(allocator_segment_size(size), stream, small, force);
  };
  if (id < 0) id = alloc_block(false);
  if (id < 0) {
    empty_cache();
    id = alloc_block(false);
  }
  if (id < 0) {
    oom_ = true;
    id = alloc_block(true);
  }
  uncache(id);
  split(id, size);
  blocks_[size_t(id)].allocated = true;
  count_alloc(blocks_[size_t(id)].size);
  return id;
}

// `other` (a neighbour in the same segment, free and mapped as `id` is, or both unmapped)
// joins block `id`.
void CachingAllocator::merge_into(int id, int other) {
  Block& b = blocks_[size_t(id)];
  Block& o = blocks_[size_t(other)];
  if (o.mapped) {
    uncache(other);
  } else {
    unmapped_.erase(unmapped_key(other));
  }
  if (o.ptr < b.ptr) {
    b.ptr = o.ptr;
    b.prev = o.prev;
    if (b.prev >= 0) blocks_[size_t(b.prev)].next = id;
  } else {
    b.next = o.next;
    if (b.next >= 0) blocks_[size_t(b.next)].prev = id;
  }
  b.size += o.size;
  o.size = 0;
  o.segment = -1;
  dead_.push_back(other);
}

// A slot for a new block: a dead block's (merged into a neighbour, or its segment released)
// when there is one. A step's replay splits and merges some 50k times but holds a few hundred
// blocks at once; a slot per split grew blocks_ to megabytes per candidate, and the growth and
// its page faults were a third of a Muon plan's time. A handle is only ever a live block's, so
// no caller sees a reused slot; ties in the free sets fall to the address before the slot.
int CachingAllocator::new_block(const Block& b) {
  if (dead_.empty()) {
    blocks_.push_back(b);
    return int(blocks_.size()) - 1;
  }
  const int id = dead_.back();
  dead_.pop_back();
  blocks_[size_t(id)] = b;
  return id;
}

void CachingAllocator::free(int handle) {
  Block& b = blocks_[size_t(handle)];
  b.allocated = false;
  allocated_ -= b.size;
  const int prev = b.prev, next = b.next;
  if (is_free(prev)) merge_into(handle, prev);
  if (is_free(next)) merge_into(handle, next);
  cache_free(handle);
}

// unmap_block: the whole pages inside free block `id` go back; what is left of it before and
// after them stays a free mapped block; the unmapped range merges with unmapped neighbours.
void CachingAllocator::unmap_block(int id) {
  const Block b = blocks_[size_t(id)];
  const int64_t page = page_bytes(b.small);
  const int64_t begin = ceil_to(b.ptr, page), end = (b.ptr + b.size) / page * page;
  if (begin >= end) return;
  uncache(id);
  auto piece = [&](int64_t ptr, int64_t size, int prev, int next) {
    const int p = new_block({ptr, size, b.stream, b.segment, prev, next, b.small, false, true});
    if (prev >= 0) blocks_[size_t(prev)].next = p;
    if (next >= 0) blocks_[size_t(next)].prev = p;
    cache_free(p);
  };
  if (begin > b.ptr) piece(b.ptr, begin - b.ptr, b.prev, id);
  if (end < b.ptr + b.size) piece(end, b.ptr + b.size - end, id, blocks_[size_t(id)].next);
  Block& u = blocks_[size_t(id)];
  u.ptr = begin;
  u.size = end - begin;
  u.mapped = false;
  reserved_ -= end - begin;
  segments_[size_t(u.segment)].size -= end - begin;
  const int prev = u.prev, next = u.next;
  auto unmapped_free = [&](int n) {
    return n >= 0 && !blocks_[size_t(n)].allocated && !blocks_[size_t(n)].mapped;
  };
  if (unmapped_free(prev)) merge_into(id, prev);
  if (unmapped_free(next)) merge_into(id, next);
  unmapped_.insert(unmapped_key(id));
}

// release_cached_blocks: a segment whose one block is free goes back; in an expandable
// segment every free block's whole pages are unmapped.
int64_t CachingAllocator::empty_cache() {
  const int64_t before = reserved_;
  // Only the releasable blocks, in the free set's order: at the capacity every malloc that
  // needs a new segment calls this, and a scan of the whole free set (mostly small blocks of
  // live segments) was half of a plan's time with 64 LoRA slots (issue 46 item 17).
  const std::vector<FreeKey> cached(releasable_.begin(), releasable_.end());
  for (const FreeKey& k : cached) {
    const Block& b = blocks_[size_t(k.id)];
    Segment& g = segments_[size_t(b.segment)];
    if (g.expandable) {
      unmap_block(k.id);
    } else {
      g.live = false;
      reserved_ -= g.size;
      uncache(k.id);
      dead_.push_back(k.id);
    }
  }
  return before - reserved_;
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

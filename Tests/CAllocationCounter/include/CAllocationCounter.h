#ifndef C_ALLOCATION_COUNTER_H
#define C_ALLOCATION_COUNTER_H

#include <stdint.h>

/// The number of allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by the whole
/// process so far, or 0 where counting is not supported (anything but glibc).
uint64_t rebound_allocation_count(void);

/// The bytes the process holds in live heap allocations (usable sizes), or 0 where not supported.
int64_t rebound_live_bytes(void);

/// Whether allocations are counted on this platform.
int rebound_allocation_counting_supported(void);

/// The number of size buckets of `rebound_live_allocations_of_size`.
#define REBOUND_SIZE_BUCKETS 257

/// The live allocations whose usable size is in [16 * index, 16 * index + 16), the last bucket holding every larger
/// one; 0 where not supported. For finding out what a waiting request holds.
int64_t rebound_live_allocations_of_size(int index);

#endif

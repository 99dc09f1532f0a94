// On glibc, the executable's own definitions of malloc and friends take the place of the C library's for the whole
// process; they count the call and forward to glibc's implementation (__libc_malloc and friends). Elsewhere nothing
// is replaced and the count stays 0; so too under the thread sanitizer, whose runtime must see every allocation.
//
// Used by the benchmarks (Benchmarks/Sources/CAllocationCounter is a link to this folder) and by the allocation
// budget tests (Tests/ReboundCostTests).
#include "CAllocationCounter.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define REBOUND_SANITIZED 1
#endif
#endif

#if defined(__GLIBC__) && !defined(REBOUND_SANITIZED)
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static uint64_t allocations = 0;
static int64_t live = 0;
/// Live allocations by usable size, in 16-byte steps; the last bucket holds every larger one.
static int64_t liveBySize[REBOUND_SIZE_BUCKETS];

static inline int bucket(size_t size) {
    size_t index = size / 16;
    return index < REBOUND_SIZE_BUCKETS ? (int)index : REBOUND_SIZE_BUCKETS - 1;
}

/// Counts an allocation and the bytes it holds.
static inline void *counted(void *pointer) {
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    if (pointer != NULL) {
        size_t size = malloc_usable_size(pointer);
        __atomic_add_fetch(&live, (int64_t)size, __ATOMIC_RELAXED);
        __atomic_add_fetch(&liveBySize[bucket(size)], 1, __ATOMIC_RELAXED);
    }
    return pointer;
}

static inline void released(void *pointer) {
    if (pointer != NULL) {
        size_t size = malloc_usable_size(pointer);
        __atomic_sub_fetch(&live, (int64_t)size, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&liveBySize[bucket(size)], 1, __ATOMIC_RELAXED);
    }
}

void *malloc(size_t size) { return counted(__libc_malloc(size)); }

void *calloc(size_t count_, size_t size) { return counted(__libc_calloc(count_, size)); }

void *realloc(void *pointer, size_t size) {
    released(pointer);
    return counted(__libc_realloc(pointer, size));
}

void *memalign(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

void *aligned_alloc(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    void *pointer = counted(__libc_memalign(alignment, size));
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void free(void *pointer) {
    released(pointer);
    __libc_free(pointer);
}

uint64_t rebound_allocation_count(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }
int64_t rebound_live_bytes(void) { return __atomic_load_n(&live, __ATOMIC_RELAXED); }
int rebound_allocation_counting_supported(void) { return 1; }
int64_t rebound_live_allocations_of_size(int index) {
    return index >= 0 && index < REBOUND_SIZE_BUCKETS ? __atomic_load_n(&liveBySize[index], __ATOMIC_RELAXED) : 0;
}
#else
uint64_t rebound_allocation_count(void) { return 0; }
int64_t rebound_live_bytes(void) { return 0; }
int rebound_allocation_counting_supported(void) { return 0; }
int64_t rebound_live_allocations_of_size(int index) { return 0; }
#endif

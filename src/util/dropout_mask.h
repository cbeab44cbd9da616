/* The dropout mask (docs/models.md §block-dropout-bidirectional) as a counter-based hash, shared by
 * the CPU op and the CUDA kernel so that both drop the same elements: nothing is stored, and a mask
 * is the same whatever the thread count or backend. Element (row, channel) of a site is kept iff
 * the top 32 bits of mix64(key + mix64(index)) are at least threshold = floor(p 2^32), index = row
 * * C + channel. */
#ifndef ROTOR_DROPOUT_MASK_H
#define ROTOR_DROPOUT_MASK_H

#include <stdint.h>

#ifdef __CUDACC__
#define DROPOUT_FN static inline __host__ __device__
#else
#define DROPOUT_FN static inline
#endif

/* splitmix64's finaliser (rng_mix64 in util/rng.c, restated for the device) */
DROPOUT_FN uint64_t dropout_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Whether element `index` of the site with key `key` is kept. */
DROPOUT_FN int dropout_keep(uint64_t key, uint64_t index, uint32_t threshold) {
    return (uint32_t)(dropout_mix64(key + dropout_mix64(index)) >> 32) >= threshold;
}

/* The key of one dropout site (a layer's place in the block) of a pass with key pass_key. */
DROPOUT_FN uint64_t dropout_site_key(uint64_t pass_key, uint64_t site) {
    return dropout_mix64(pass_key ^ dropout_mix64(site + 0x9E3779B97F4A7C15ull));
}

/* floor(p 2^32) for p in [0, 1). */
DROPOUT_FN uint32_t dropout_threshold(double p) { return (uint32_t)(p * 4294967296.0); }

#endif

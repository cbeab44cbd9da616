// The chunks of Seqs on the device, for the chunked kernels (gla.cu, gdn.cu, fox.cu): rows of
// Seqs.dev_chunk are (first token, length, segment), in token order, so a segment's chunks
// are consecutive.
#pragma once

#include "lib/cuda_common.cuh"

namespace {

constexpr int CHUNK = CHUNK_SIZE; // tokens per chunk
static_assert(CHUNK == 64, "the chunked kernels assume chunks of 64 tokens");

struct Chunk {
    int first, len, seg;
    bool seg_first, seg_last; // first / last chunk of its segment
};

__device__ __forceinline__ Chunk chunk_at(const int *chunks, const int *cu, int64_t c) {
    Chunk ch;
    ch.first = chunks[3 * c];
    ch.len = chunks[3 * c + 1];
    ch.seg = chunks[3 * c + 2];
    ch.seg_first = ch.first == cu[ch.seg];
    ch.seg_last = ch.first + ch.len == cu[ch.seg + 1];
    return ch;
}

// Index of the first chunk of segment seg.
__device__ __forceinline__ int64_t first_chunk(const int *chunks, int64_t nchunk, int seg) {
    int64_t lo = 0, hi = nchunk;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (chunks[3 * mid + 2] < seg)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// The walk over one segment's chunks of the sequential scans: chunks c0 .. c0 + n - 1, tokens
// first .. end - 1.
struct SegChunks {
    int64_t c0;
    int first, end, n;
};

__device__ __forceinline__ SegChunks seg_chunks(const int *chunks, const int *cu, int64_t nchunk,
                                                int seg) {
    SegChunks w;
    w.first = cu[seg];
    w.end = cu[seg + 1];
    w.n = (w.end - w.first + CHUNK - 1) / CHUNK;
    w.c0 = first_chunk(chunks, nchunk, seg);
    return w;
}

} // namespace

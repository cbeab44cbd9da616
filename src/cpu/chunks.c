/* Chunk bookkeeping shared by the chunked linear-attention kernels (GLA, Gated DeltaNet). */
#include "cpu/cpu_ops.h"
#include "util/error.h"

int64_t *chunk_bases(const Seqs *s) {
    int64_t *b = rt_malloc(sizeof(int64_t) * (size_t)(s->nseg + 1));
    b[0] = 0;
    for (int i = 0; i < s->nseg; i++)
        b[i + 1] = b[i] + (s->cu[i + 1] - s->cu[i] + CHUNK_SIZE - 1) / CHUNK_SIZE;
    return b;
}

// Backend.seqs_prepare of the CUDA backend: a batch's segments in device memory for the
// kernels — int32 offsets, positions, and the chunk table (every CHUNK_SIZE piece of every
// segment in order: first token, length, segment).
#include <stdlib.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

struct Mirror {
    void *cu = nullptr, *pos = nullptr, *chunk = nullptr; // device buffers, grown as needed
    size_t cu_bytes = 0, pos_bytes = 0, chunk_bytes = 0;
    int32_t *host = nullptr; // staging for the int32 copies
    size_t host_bytes = 0;
};

void *grow(void **p, size_t *have, size_t bytes) {
    if (bytes > *have) {
        if (*p) cuda_release(*p);
        *p = cuda_alloc(bytes);
        *have = bytes;
    }
    return *p;
}

int32_t *staging(Mirror *m, size_t n) {
    if (n * sizeof(int32_t) > m->host_bytes) {
        m->host = (int32_t *)rt_realloc(m->host, n * sizeof(int32_t));
        m->host_bytes = n * sizeof(int32_t);
    }
    return m->host;
}

} // namespace

void cuda_seqs_prepare(Seqs *s, void **mirror) {
    if (!*mirror) *mirror = new Mirror();
    Mirror *m = (Mirror *)*mirror;
    if (s->ntok > INT32_MAX)
        rt_die("batch of %lld tokens exceeds the int32 token index", (long long)s->ntok);
    int64_t nchunk = 0;
    for (int i = 0; i < s->nseg; i++) nchunk += cdiv(s->cu[i + 1] - s->cu[i], CHUNK_SIZE);
    size_t ncu = (size_t)s->nseg + 1, npos = (size_t)s->ntok, nch = 3 * (size_t)nchunk;
    int32_t *h = staging(m, ncu > nch ? ncu : nch);
    for (size_t i = 0; i < ncu; i++) h[i] = (int32_t)s->cu[i];
    cuda_upload(grow(&m->cu, &m->cu_bytes, ncu * 4), h, ncu * 4);
    cuda_upload(grow(&m->pos, &m->pos_bytes, (npos ? npos : 1) * 4), s->pos, npos * 4);
    int64_t c = 0;
    for (int i = 0; i < s->nseg; i++)
        for (int64_t t = s->cu[i]; t < s->cu[i + 1]; t += CHUNK_SIZE, c++) {
            int64_t len = s->cu[i + 1] - t;
            h[3 * c] = (int32_t)t;
            h[3 * c + 1] = (int32_t)(len < CHUNK_SIZE ? len : CHUNK_SIZE);
            h[3 * c + 2] = i;
        }
    // the upload has read the staging buffer when it returns (pageable host memory)
    cuda_upload(grow(&m->chunk, &m->chunk_bytes, (nch ? nch : 1) * 4), h, nch * 4);
    s->nchunk = nchunk;
    s->dev_cu = (const int32_t *)m->cu;
    s->dev_pos = (const int32_t *)m->pos;
    s->dev_chunk = (const int32_t *)m->chunk;
}

void cuda_seqs_release(void *mirror) {
    Mirror *m = (Mirror *)mirror;
    if (!m) return;
    if (m->cu) cuda_release(m->cu);
    if (m->pos) cuda_release(m->pos);
    if (m->chunk) cuda_release(m->chunk);
    rt_free(m->host);
    delete m;
}

/* Device mirrors of a batch's segments: int32 offsets, positions and the chunk table. */
#include "model/seqs.h"

#include "util/error.h"

static void *grow(const Backend *be, void **p, size_t *have, size_t bytes) {
    if (bytes > *have) {
        if (*p) be->release(*p);
        *p = be->alloc(bytes);
        *have = bytes;
    }
    return *p;
}

static int32_t *staging(SeqsMirror *m, size_t n) {
    if (n * sizeof(int32_t) > m->host_bytes) {
        m->host = rt_realloc(m->host, n * sizeof(int32_t));
        m->host_bytes = n * sizeof(int32_t);
    }
    return m->host;
}

void seqs_mirror(SeqsMirror *m, const Backend *be, Seqs *s) {
    if (s->ntok > INT32_MAX) rt_die("batch of %lld tokens exceeds the int32 token index", (long long)s->ntok);
    int64_t nchunk = 0;
    for (int i = 0; i < s->nseg; i++) nchunk += (s->cu[i + 1] - s->cu[i] + CHUNK_SIZE - 1) / CHUNK_SIZE;
    size_t ncu = (size_t)s->nseg + 1, npos = (size_t)s->ntok, nch = 3 * (size_t)nchunk;
    int32_t *h = staging(m, ncu > nch ? ncu : nch);
    for (size_t i = 0; i < ncu; i++) h[i] = (int32_t)s->cu[i];
    be->upload(grow(be, &m->cu, &m->cu_bytes, ncu * 4), h, ncu * 4);
    be->upload(grow(be, &m->pos, &m->pos_bytes, (npos ? npos : 1) * 4), s->pos, npos * 4);
    int64_t c = 0;
    for (int i = 0; i < s->nseg; i++)
        for (int64_t t = s->cu[i]; t < s->cu[i + 1]; t += CHUNK_SIZE, c++) {
            int64_t len = s->cu[i + 1] - t;
            h[3 * c] = (int32_t)t;
            h[3 * c + 1] = (int32_t)(len < CHUNK_SIZE ? len : CHUNK_SIZE);
            h[3 * c + 2] = i;
        }
    be->upload(grow(be, &m->chunk, &m->chunk_bytes, (nch ? nch : 1) * 4), h, nch * 4);
    s->nchunk = nchunk;
    s->dev_cu = m->cu;
    s->dev_pos = m->pos;
    s->dev_chunk = m->chunk;
}

void seqs_mirror_free(SeqsMirror *m, const Backend *be) {
    if (m->cu) be->release(m->cu);
    if (m->pos) be->release(m->pos);
    if (m->chunk) be->release(m->chunk);
    rt_free(m->host);
    *m = (SeqsMirror){0};
}

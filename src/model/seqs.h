/* Device mirrors of a batch's segments (the dev_* fields of Seqs). */
#ifndef ROTOR_SEQS_H
#define ROTOR_SEQS_H

#include "backend.h"

typedef struct {
    void *cu, *pos, *chunk;             /* backend buffers, grown as needed */
    size_t cu_bytes, pos_bytes, chunk_bytes;
    int32_t *host;                      /* staging for the int32 copies */
    size_t host_bytes;
} SeqsMirror;

/* Computes the chunk table of s and uploads cu, pos and the chunks into m's buffers;
 * points s->dev_* at them. */
void seqs_mirror(SeqsMirror *m, const Backend *be, Seqs *s);
void seqs_mirror_free(SeqsMirror *m, const Backend *be);

#endif

/* LRA's ListOps files: csv.writer output with a tab delimiter, a "Source\tTarget" header,
 * then an expression in its parenthesised text form and its value per line. */
#include <string.h>

#include "data/listops.h"
#include "util/error.h"

typedef struct {
    int keep;
    ClassSet *set;
    int header;   /* the header line was read */
    uint8_t *tok; /* [cap] */
    size_t cap;
} Reader;

static int read_line(void *ctx, const TsvLine *l, char *msg, size_t msglen) {
    Reader *r = ctx;
    if (!r->header) {
        r->header = 1;
        if (!l->rest || strcmp(l->first, "Source") || strcmp(l->rest, "Target"))
            return rt_error(msg, msglen, NULL, "expected LRA's header line \"Source<TAB>Target\"");
        return 0;
    }
    if (!l->rest || memchr(l->rest, '\t', l->rest_len))
        return rt_error(msg, msglen, NULL,
                        "expected two tab-separated columns, an expression and its value");
    if (l->first_len / 2 + 1 > r->cap) {
        r->cap = l->first_len / 2 + 1; /* a token and a separator take at least two bytes */
        r->tok = rt_realloc(r->tok, r->cap);
    }
    char why[256];
    int n = listops_tokenize(l->first, r->tok, (int)r->cap, why, sizeof why);
    if (n < 0) return rt_error(msg, msglen, NULL, "%s", why);
    int value = listops_eval(r->tok, n);
    if (value < 0)
        return rt_error(msg, msglen, NULL, "the Source column is not one well-formed expression");
    if (l->rest_len != 1 || l->rest[0] < '0' || l->rest[0] > '9')
        return rt_error(msg, msglen, NULL, "Target '%.20s' is not a value 0-9", l->rest);
    if (l->rest[0] - '0' != value)
        return rt_error(msg, msglen, NULL, "Target %c, but the expression's value is %d",
                        l->rest[0], value);
    class_set_add(r->set, r->tok, n, r->keep, value);
    return 0;
}

int listops_read_tsv(const char *path, int keep, ClassSet *set, char *err, size_t errlen) {
    Reader r = {keep, set, 0, NULL, 0};
    int64_t before = set->n;
    int rc = tsv_read(path, read_line, &r, err, errlen);
    rt_free(r.tok);
    if (rc == 0 && set->n == before) rc = rt_error(err, errlen, path, "no examples");
    return rc;
}

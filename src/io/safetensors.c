#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; rotor writes and reads the host's bytes as they are"
#endif

/* The reference implementation refuses headers above 100 MB; so do we (a corrupted size
 * field would otherwise make us parse garbage). */
#define ST_HEADER_MAX ((uint64_t)100 << 20)

struct StFile {
    char *path;
    void *map; /* the whole file, read-only */
    size_t size;
    StTensor *t; /* sorted by data offset */
    int n;
    json_t *meta; /* "__metadata__" object, or NULL */
};

static const struct {
    const char *name;
    size_t size;
} DTYPES[] = {
    {"F64", 8},     {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E5M2", 1},
    {"F8_E4M3", 1}, {"I64", 8}, {"I32", 4}, {"I16", 2},  {"I8", 1},
    {"U64", 8},     {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1},
};

size_t st_dtype_size(const char *dtype) {
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (!strcmp(DTYPES[i].name, dtype)) return DTYPES[i].size;
    return 0;
}

/* Elements of a shape; -1 on overflow past 2^63. */
static int64_t shape_numel(const int64_t *shape, int ndim) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] && n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

void st_format_shape(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

int st_is_float(const char *dtype) {
    return !strcmp(dtype, "F32") || !strcmp(dtype, "F64") || !strcmp(dtype, "BF16") ||
           !strcmp(dtype, "F16");
}

/* IEEE half precision to float: subnormals, infinities and NaNs included. */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else { /* zero or subnormal: man * 2^-24 */
        float f = (float)man * 0x1p-24f;
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void st_read_f32(const StTensor *x, float *dst) {
    const unsigned char *b = x->data; /* not necessarily aligned: element by element */
    size_t n = x->nbytes / st_dtype_size(x->dtype);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(x->dtype, "F32")) {
            memcpy(dst + i, b + 4 * i, 4);
        } else if (!strcmp(x->dtype, "F64")) {
            double d;
            memcpy(&d, b + 8 * i, 8);
            dst[i] = (float)d;
        } else {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            if (!strcmp(x->dtype, "F16")) {
                dst[i] = half_to_float(h);
            } else { /* BF16: the high half of a float */
                uint32_t bits = (uint32_t)h << 16;
                memcpy(dst + i, &bits, 4);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------ */
/* Writing                                                                              */
/* ------------------------------------------------------------------------------------ */

/* The JSON header for the tensors laid out back to back; NULL on a bad tensor. */
static json_t *build_header(const char *path, const StTensor *t, int n, const char *const *meta_kv,
                            char *err, size_t errlen) {
    json_t *hdr = json_object();
    if (meta_kv && meta_kv[0]) {
        json_t *meta = json_object();
        for (const char *const *kv = meta_kv; kv[0]; kv += 2) {
            RT_ASSERT(kv[1]);
            json_t *v = json_string(kv[1]);
            if (!v || json_object_set_new(meta, kv[0], v)) {
                json_decref(meta);
                json_decref(hdr);
                rt_error(err, errlen, path, "metadata '%s' is not valid UTF-8", kv[0]);
                return NULL;
            }
        }
        json_object_set_new(hdr, "__metadata__", meta);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const StTensor *x = &t[i];
        const char *why = NULL;
        size_t es = st_dtype_size(x->dtype);
        int64_t numel =
            x->ndim >= 0 && x->ndim <= ST_MAX_DIMS ? shape_numel(x->shape, x->ndim) : -1;
        if (!x->name[0] || !strcmp(x->name, "__metadata__"))
            why = "reserved or empty name";
        else if (json_object_get(hdr, x->name))
            why = "name used twice";
        else if (!es)
            why = "unknown dtype";
        else if (numel < 0)
            why = "invalid shape";
        else if ((uint64_t)numel > SIZE_MAX / es || (size_t)numel * es != x->nbytes)
            why = "nbytes does not match the shape";
        if (why) {
            json_decref(hdr);
            rt_error(err, errlen, path, "cannot write tensor '%s' (dtype %s): %s", x->name,
                     x->dtype, why);
            return NULL;
        }
        json_t *shape = json_array();
        for (int d = 0; d < x->ndim; d++) json_array_append_new(shape, json_integer(x->shape[d]));
        json_t *entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", x->dtype, "shape", shape,
                                  "data_offsets", (json_int_t)off, (json_int_t)(off + x->nbytes));
        if (!entry || json_object_set_new(hdr, x->name, entry)) {
            json_decref(hdr);
            rt_error(err, errlen, path, "cannot write tensor '%s': name is not valid UTF-8",
                     x->name);
            return NULL;
        }
        off += x->nbytes;
    }
    return hdr;
}

int st_write(const char *path, const StTensor *t, int n, const char *const *meta_kv, char *err,
             size_t errlen) {
    json_t *hdr = build_header(path, t, n, meta_kv, err, errlen);
    if (!hdr) return -1;
    char *text = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    RT_ASSERT(text);
    size_t len = strlen(text), padded = (len + 7) & ~(size_t)7;
    unsigned char *head = rt_malloc(8 + padded);
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(head + 8, text, len);
    memset(head + 8 + len, ' ', padded - len);
    free(text);

    char *tmp = rt_sprintf("%s.tmp", path);
    int rc = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rt_error(err, errlen, tmp, "cannot create: %s", strerror(errno));
        goto done;
    }
    int ok = fs_write_all(fd, head, 8 + padded) == 0;
    for (int i = 0; i < n && ok; i++) ok = fs_write_all(fd, t[i].data, t[i].nbytes) == 0;
    if (!ok || fsync(fd)) {
        rt_error(err, errlen, tmp, "write failed: %s", strerror(errno));
        close(fd);
        unlink(tmp);
        goto done;
    }
    if (close(fd)) {
        rt_error(err, errlen, tmp, "write failed: %s", strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path)) {
        rt_error(err, errlen, path, "cannot rename %s into place: %s", tmp, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (fs_sync_parent(path)) {
        rt_error(err, errlen, path, "cannot sync its directory: %s", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    rt_free(tmp);
    rt_free(head);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Reading                                                                              */
/* ------------------------------------------------------------------------------------ */

static int cmp_offset(const void *a, const void *b) {
    const StTensor *x = a, *y = b;
    if (x->data != y->data) return (const char *)x->data < (const char *)y->data ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name); /* empty tensors sharing an offset: a fixed order */
}

/* Reads a non-negative JSON integer. */
static int get_u64(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* Parses and checks one header entry; `data`/`dsize` is the data section. */
static int parse_tensor(StFile *f, const char *name, json_t *v, const char *data, uint64_t dsize,
                        StTensor *x, char *err, size_t errlen) {
    const char *p = f->path;
    memset(x, 0, sizeof(*x));
    if (strlen(name) >= ST_NAME_MAX)
        return rt_error(err, errlen, p, "tensor name '%.60s...' is longer than %d bytes", name,
                        ST_NAME_MAX - 1);
    strcpy(x->name, name);
    if (!json_is_object(v))
        return rt_error(err, errlen, p, "tensor '%s': header entry is not an object", name);
    const char *key;
    json_t *field;
    json_object_foreach(v, key, field) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return rt_error(err, errlen, p, "tensor '%s': unknown header field '%s'", name, key);
    }
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt))
        return rt_error(err, errlen, p, "tensor '%s': 'dtype' is missing or not a string", name);
    size_t es = st_dtype_size(json_string_value(dt));
    if (!es)
        return rt_error(err, errlen, p, "tensor '%s': unknown dtype '%s'", name,
                        json_string_value(dt));
    strcpy(x->dtype, json_string_value(dt));
    if (!json_is_array(sh))
        return rt_error(err, errlen, p, "tensor '%s': 'shape' is missing or not an array", name);
    if (json_array_size(sh) > ST_MAX_DIMS)
        return rt_error(err, errlen, p, "tensor '%s' has %zu dimensions, at most %d are supported",
                        name, json_array_size(sh), ST_MAX_DIMS);
    x->ndim = (int)json_array_size(sh);
    for (int d = 0; d < x->ndim; d++) {
        uint64_t s;
        if (get_u64(json_array_get(sh, (size_t)d), &s))
            return rt_error(err, errlen, p,
                            "tensor '%s': shape entries must be non-negative integers", name);
        x->shape[d] = (int64_t)s;
    }
    uint64_t b, e;
    if (!json_is_array(off) || json_array_size(off) != 2 || get_u64(json_array_get(off, 0), &b) ||
        get_u64(json_array_get(off, 1), &e) || b > e)
        return rt_error(err, errlen, p,
                        "tensor '%s': 'data_offsets' must be [begin, end] with 0 <= begin <= end",
                        name);
    int64_t numel = shape_numel(x->shape, x->ndim);
    if (numel < 0 || (uint64_t)numel > UINT64_MAX / es || (uint64_t)numel * es != e - b)
        return rt_error(err, errlen, p,
                        "tensor '%s': offsets [%llu, %llu] hold %llu bytes, but its shape and "
                        "dtype %s need %lld x %zu",
                        name, (unsigned long long)b, (unsigned long long)e,
                        (unsigned long long)(e - b), x->dtype, (long long)numel, es);
    if (e > dsize)
        return rt_error(err, errlen, p,
                        "tensor '%s' ends at byte %llu of the data, which holds only %llu bytes "
                        "(truncated file?)",
                        name, (unsigned long long)e, (unsigned long long)dsize);
    x->data = data + b;
    x->nbytes = (size_t)(e - b);
    return 0;
}

/* Parses the header JSON into f->t / f->meta and checks the layout. */
static int parse_header(StFile *f, const char *text, uint64_t hsize, const char *data,
                        uint64_t dsize, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *root = json_loadb(text, (size_t)hsize, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return rt_error(err, errlen, f->path, "invalid JSON header: %s (line %d, column %d)",
                        jerr.text, jerr.line, jerr.column);
    int rc = -1;
    if (!json_is_object(root)) {
        rt_error(err, errlen, f->path, "the JSON header is not an object");
        goto done;
    }
    f->t = rt_calloc(json_object_size(root), sizeof(StTensor));
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (!strcmp(name, "__metadata__")) {
            const char *k;
            json_t *s;
            if (!json_is_object(v)) {
                rt_error(err, errlen, f->path, "'__metadata__' is not an object");
                goto done;
            }
            json_object_foreach(v, k, s) {
                if (!json_is_string(s)) {
                    rt_error(err, errlen, f->path, "metadata '%s' is not a string", k);
                    goto done;
                }
            }
            f->meta = json_incref(v);
            continue;
        }
        if (parse_tensor(f, name, v, data, dsize, &f->t[f->n], err, errlen)) goto done;
        f->n++;
    }
    /* Sorted by offset, the tensors must tile the data section exactly. */
    qsort(f->t, (size_t)f->n, sizeof(StTensor), cmp_offset);
    uint64_t pos = 0;
    for (int i = 0; i < f->n; i++) {
        uint64_t b = (uint64_t)((const char *)f->t[i].data - data);
        if (b < pos) {
            rt_error(err, errlen, f->path, "tensor '%s' overlaps tensor '%s'", f->t[i].name,
                     f->t[i - 1].name);
            goto done;
        }
        if (b > pos) {
            rt_error(err, errlen, f->path, "%llu unused bytes before tensor '%s'",
                     (unsigned long long)(b - pos), f->t[i].name);
            goto done;
        }
        pos = b + f->t[i].nbytes;
    }
    if (pos != dsize) {
        rt_error(err, errlen, f->path,
                 "the data section holds %llu bytes, but the tensors cover %llu",
                 (unsigned long long)dsize, (unsigned long long)pos);
        goto done;
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

StFile *st_open(const char *path, char *err, size_t errlen) {
    StFile *f = rt_calloc(1, sizeof(StFile));
    f->path = rt_strdup(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        rt_error(err, errlen, path, "cannot open: %s", strerror(errno));
        if (fd >= 0) close(fd);
        goto bad;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size < 8) {
        close(fd);
        rt_error(err, errlen, path,
                 S_ISREG(sb.st_mode) ? "only %lld bytes, too short for a safetensors file"
                                     : "not a regular file (%lld bytes)",
                 (long long)sb.st_size);
        goto bad;
    }
    f->size = (size_t)sb.st_size;
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        rt_error(err, errlen, path, "cannot map: %s", strerror(errno));
        goto bad;
    }
    const unsigned char *bytes = f->map;
    uint64_t hsize = 0;
    for (int i = 0; i < 8; i++) hsize |= (uint64_t)bytes[i] << (8 * i);
    if (hsize > f->size - 8) {
        rt_error(err, errlen, path,
                 "header size %llu exceeds the %llu bytes that follow it (truncated or not a "
                 "safetensors file)",
                 (unsigned long long)hsize, (unsigned long long)(f->size - 8));
        goto bad;
    }
    if (hsize > ST_HEADER_MAX) {
        rt_error(err, errlen, path, "header size %llu exceeds the 100 MB limit",
                 (unsigned long long)hsize);
        goto bad;
    }
    const char *data = (const char *)bytes + 8 + hsize;
    if (parse_header(f, (const char *)bytes + 8, hsize, data, f->size - 8 - hsize, err, errlen))
        goto bad;
    return f;
bad:
    st_close(f);
    return NULL;
}

int st_count(const StFile *f) { return f->n; }

const StTensor *st_at(const StFile *f, int i) {
    RT_ASSERT(i >= 0 && i < f->n);
    return &f->t[i];
}

const StTensor *st_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    return NULL;
}

const char *st_meta(const StFile *f, const char *key) {
    return f->meta ? json_string_value(json_object_get(f->meta, key)) : NULL;
}

void st_close(StFile *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->size);
    json_decref(f->meta);
    rt_free(f->t);
    rt_free(f->path);
    rt_free(f);
}

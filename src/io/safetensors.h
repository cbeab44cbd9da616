/* The safetensors file format (https://github.com/huggingface/safetensors):
 *
 *   u64 little-endian N | N bytes of JSON header | data
 *
 * The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}, with
 * offsets relative to the first data byte, plus an optional "__metadata__" object of string
 * values. The writer pads the header with spaces to a multiple of 8 bytes (so the data starts
 * 8-byte aligned) and lays the tensors out back to back in the order given. The reader checks
 * everything the format promises before handing out a tensor. Data is little-endian; rotor
 * only builds on little-endian hosts, so tensor bytes are the host's. */
#ifndef ROTOR_SAFETENSORS_H
#define ROTOR_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_NAME_MAX                                                                                \
    192 /* bytes of a tensor name, with its NUL: room for a prefix + a parameter name */
#define ST_MAX_DIMS 8

typedef struct {
    char name[ST_NAME_MAX];
    char dtype[8]; /* "F32", "F64", "BF16", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL", ... */
    int ndim;      /* 0 for a scalar */
    int64_t shape[ST_MAX_DIMS];
    const void *data; /* nbytes bytes, little-endian, not necessarily aligned */
    size_t nbytes;
} StTensor;

/* Size in bytes of one element of a safetensors dtype, 0 if the dtype is unknown. */
size_t st_dtype_size(const char *dtype);

/* Writes n tensors and the metadata pairs meta_kv = {key, value, ..., NULL} (may be NULL)
 * to `path` atomically: PATH.tmp is written and fsynced, renamed to PATH, and the directory
 * fsynced. Checks every tensor (known dtype, nbytes = elements x dtype size, unique names).
 * Returns 0, or -1 with a message naming the file and the problem. */
int st_write(const char *path, const StTensor *t, int n, const char *const *meta_kv, char *err,
             size_t errlen);

/* "[a, b, c]" of a shape, for messages. */
void st_format_shape(char *buf, size_t n, const int64_t *shape, int ndim);

/* Whether st_read_f32 converts a dtype: F32, F64, BF16, F16. */
int st_is_float(const char *dtype);
/* The nbytes / dtype size elements of a floating-point tensor (st_is_float) as floats. */
void st_read_f32(const StTensor *x, float *dst);

typedef struct StFile StFile;

/* Maps `path` read-only and validates it completely: header size against the file size,
 * JSON syntax (duplicate names rejected), known dtypes, shapes x dtype size = offsets, offsets
 * inside the data, tensors contiguous and non-overlapping and covering all of the data,
 * metadata values strings. Returns NULL with a message naming the file and the problem. */
StFile *st_open(const char *path, char *err, size_t errlen);
/* Tensors in file order (ascending data offset); data points into the mapping and stays
 * valid until st_close. */
int st_count(const StFile *f);
const StTensor *st_at(const StFile *f, int i);
const StTensor *st_find(const StFile *f, const char *name); /* NULL if absent */
const char *st_meta(const StFile *f, const char *key);      /* NULL if absent */
void st_close(StFile *f);

#endif

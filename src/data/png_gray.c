#include "data/png_gray.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

/* libpng reads from memory through this cursor and reports its errors into msg. */
typedef struct {
    const uint8_t *data;
    size_t n, at;
    char msg[256];
} Reader;

static void read_bytes(png_structp png, png_bytep out, size_t len) {
    Reader *r = png_get_io_ptr(png);
    if (len > r->n - r->at) png_error(png, "the file ends inside the image (truncated)");
    memcpy(out, r->data + r->at, len);
    r->at += len;
}

static void on_error(png_structp png, png_const_charp msg) {
    Reader *r = png_get_error_ptr(png);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static const char *color_name(int type) {
    switch (type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "grayscale with alpha";
    case PNG_COLOR_TYPE_PALETTE: return "palette";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    default: return "unknown";
    }
}

int png_gray_size(const char *path, const uint8_t *data, size_t n, int *height, int *width,
                  char *err, size_t errlen) {
    static const uint8_t IHDR[4] = {'I', 'H', 'D', 'R'};
    if (n < 24 || png_sig_cmp(data, 0, 8) || memcmp(data + 12, IHDR, 4))
        return rt_error(err, errlen, path,
                        "not a PNG file (%zu bytes, no PNG signature and IHDR header)", n);
    uint32_t w =
        (uint32_t)data[16] << 24 | (uint32_t)data[17] << 16 | (uint32_t)data[18] << 8 | data[19];
    uint32_t h =
        (uint32_t)data[20] << 24 | (uint32_t)data[21] << 16 | (uint32_t)data[22] << 8 | data[23];
    if (w == 0 || h == 0 || w > 1 << 15 || h > 1 << 15)
        return rt_error(err, errlen, path, "PNG header gives an image of %u x %u pixels",
                        (unsigned)h, (unsigned)w);
    *height = (int)h;
    *width = (int)w;
    return 0;
}

int png_gray_decode(const char *path, const uint8_t *data, size_t n, uint8_t **pixels, int *height,
                    int *width, char *err, size_t errlen) {
    *pixels = NULL;
    if (n < 8 || png_sig_cmp(data, 0, 8))
        return rt_error(err, errlen, path, "not a PNG file (%zu bytes, no PNG signature)", n);
    Reader r = {data, n, 0, {0}};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return rt_error(err, errlen, path, "libpng could not start");
    }
    /* volatile: set between setjmp and a longjmp back to it */
    uint8_t *volatile px = NULL;
    png_bytep *volatile rowp = NULL;
    int rc = 0;
    if (setjmp(png_jmpbuf(png))) {
        rc = rt_error(err, errlen, path, "bad PNG: %s", r.msg);
        goto done;
    }
    png_set_read_fn(png, &r, read_bytes);
    png_read_info(png, info);
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (type != PNG_COLOR_TYPE_GRAY) {
        rc = rt_error(err, errlen, path, "a %s PNG: only grayscale images without alpha are read",
                      color_name(type));
        goto done;
    }
    if (depth > 8) {
        rc = rt_error(err, errlen, path,
                      "a %d-bit grayscale PNG: only 1-, 2-, 4- and 8-bit images are read", depth);
        goto done;
    }
    if (png_get_valid(png, info, PNG_INFO_tRNS)) {
        rc = rt_error(
            err, errlen, path,
            "a grayscale PNG with a transparency chunk: only images without alpha are read");
        goto done;
    }
    if (depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    RT_ASSERT(png_get_rowbytes(png, info) == w);
    px = rt_malloc((size_t)w * h);
    rowp = rt_malloc(sizeof(png_bytep) * h);
    for (png_uint_32 y = 0; y < h; y++) rowp[y] = px + (size_t)y * w;
    png_read_image(png, rowp);
    png_read_end(png, NULL);
    *pixels = px;
    px = NULL;
    *height = (int)h;
    *width = (int)w;
done:
    png_destroy_read_struct(&png, &info, NULL);
    rt_free(px);
    rt_free(rowp);
    return rc;
}

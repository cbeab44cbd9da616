/* Grayscale PNG images (LRA's Pathfinder files, data/pathfinder.h), decoded with libpng. */
#ifndef ROTOR_PNG_GRAY_H
#define ROTOR_PNG_GRAY_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the PNG file `path`, whose bytes are data[0, n), into its height x width intensities
 * 0..255, row-major, in *pixels (release with rt_free). Only grayscale without alpha is read:
 * 8-bit as it is, 1-, 2- and 4-bit expanded to 0..255 as libpng (and TensorFlow's decode_png)
 * scale them. Returns 0, or -1 with a message naming the file and what is wrong: not a PNG,
 * truncated or corrupt, a colour type or bit depth other than those. */
int png_gray_decode(const char *path, const uint8_t *data, size_t n, uint8_t **pixels, int *height,
                    int *width, char *err, size_t errlen);

/* The size of a PNG from its header alone (the IHDR chunk): 0, or -1 with a message naming
 * the file when the bytes are not a PNG header. */
int png_gray_size(const char *path, const uint8_t *data, size_t n, int *height, int *width,
                  char *err, size_t errlen);

#endif

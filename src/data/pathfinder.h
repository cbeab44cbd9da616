/* Long Range Arena's Pathfinder files (task.type = pathfinder; docs/classification.md
 * "Pathfinder"), read into the image-set form of data/image_set.h, whose rows data/image_task.h
 * serves.
 *
 * task.path is a resolution directory of LRA's release (pathfinder32, pathfinder64,
 * pathfinder128 = Path-X, pathfinder256); task.difficulty picks its subdirectory, LRA's split
 * names: easy = curv_baseline, intermediate = curv_contour_length_9, hard =
 * curv_contour_length_14. There, every metadata file (metadata/NAME.npy) is text: one line per
 * image, fields separated by single spaces, field 0 the image's directory (imgs/<batch>), field 1
 * its file name (sample_<i>.png), field 3 its label 0 or 1.
 *
 * The splits are LRA's: its tfds builder orders the examples by the MD5 of the salt (the
 * difficulty's name) followed by the example key "<field 0>_<field 1>_<line number in its
 * metadata file, from 1>", and LRA takes the first 80% (rounded to the nearest, half to
 * even) to train, the next 10% to validate and the rest to test, then drops the empty image
 * files. */
#ifndef ROTOR_PATHFINDER_H
#define ROTOR_PATHFINDER_H

#include <stddef.h>
#include <stdint.h>

#include "data/datasource.h"
#include "data/image_set.h"

/* The subdirectory of a task.difficulty name, or NULL when the name is not one. */
const char *pathfinder_dir(const char *difficulty);

/* The split's images, in LRA's order, into *set; *empty receives how many of the split's
 * image files were empty and left out, as LRA leaves them out. Returns 0, or -1 with a
 * message naming the key, file or line at fault: a missing directory, a malformed metadata
 * line, a missing image, a bad PNG, images of different sizes. */
int pathfinder_load(const TaskConfig *task, DataSplit split, ImageSet *set, int64_t *empty,
                    char *err, size_t errlen);

/* The pixel count of the images (the row length), from the header of the first non-empty
 * image the metadata lists. */
int pathfinder_pixels(const TaskConfig *task, int *pixels, char *err, size_t errlen);

#endif

/* task.type = seq_image: image classification as sequences (LRA's Image task, sequential and
 * permuted pixel MNIST). An image is a row of its pixel intensities, in raster order or in
 * the fixed order of task.permute_seed, with its class as the label of the last position
 * (data/image_set.h). The images come from an IDX file pair (MNIST, Fashion-MNIST) or a
 * CIFAR-10 binary directory, read into memory when the split is opened.
 *   train  the training file without its last task.val_examples images, in a new order
 *          every epoch (a function of the run seed and the epoch), cycled;
 *   val    those last task.val_examples images, in file order, cycled;
 *   test   the test file (task.test_images / task.test_labels, by default the t10k-* files
 *          beside MNIST-named train-* files; CIFAR-10: test_batch.bin), in file order, cycled.
 * task.type = pathfinder serves LRA's Pathfinder images the same way, each split LRA's
 * (data/pathfinder.h): the training split in a new order every epoch, validation and test in
 * LRA's order. */
#ifndef ROTOR_IMAGE_TASK_H
#define ROTOR_IMAGE_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "data/datasource.h"

typedef struct ImageTask ImageTask;

typedef struct {
    const TaskConfig *task;
    DataSplit split;
    uint64_t seed;  /* the run's: the training order */
    int seq_len;    /* train.seq_len: must be the pixel count */
    int pathfinder; /* LRA's Pathfinder (task.path), else images and labels of IDX or CIFAR-10 files
                     */
} ImageTaskArgs;

/* The row length of the task: rows x columns from the header of task.images, or 1024 for a
 * CIFAR-10 directory; Pathfinder's image size. */
int image_task_pixels(const TaskConfig *task, int pathfinder, int *pixels, char *err,
                      size_t errlen);

/* Reads the split's files. NULL with a message naming the key, file or value at fault. */
ImageTask *image_task_open(const ImageTaskArgs *a, char *err, size_t errlen);
void image_task_free(ImageTask *t);
/* Images in one pass over the split. */
int64_t image_task_examples(const ImageTask *t);
/* The row of the split's global example index i >= 0 (wrapping into later passes). */
void image_task_example(const ImageTask *t, int64_t i, int32_t *tokens, int32_t *labels);

#endif

/* TensorBoard event files, as `tensorboard --logdir RUNS` reads them: TFRecord records (a
 * little-endian u64 length, its masked CRC-32C, the bytes, their masked CRC-32C) of Event
 * protocol buffers (src/io/tensorboard.proto, encoded by protobuf-c) in
 * DIR/events.out.tfevents.<seconds>.<host>.<pid>. The first event names the file version; the
 * second is a SessionLog START at the first step the writer will log, at which TensorBoard
 * drops the scalars earlier files logged at that step and after (a resumed run redoes them). */
#ifndef ROTOR_TB_EVENTS_H
#define ROTOR_TB_EVENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct TbEvents TbEvents;

/* Creates DIR if needed and a new event file in it whose scalars begin at first_step. NULL
 * with a message naming the file. */
TbEvents *tb_open(const char *dir, int64_t first_step, char *err, size_t errlen);
/* One scalar under `tag` at `step`; wall_time in seconds since the epoch. Returns 0, or -1
 * with a message naming the file. */
int tb_scalar(TbEvents *w, const char *tag, int64_t step, double wall_time, float value, char *err,
              size_t errlen);
/* Flushes what was written to the file. */
void tb_flush(TbEvents *w);
void tb_close(TbEvents *w);

/* CRC-32C (Castagnoli, reflected 0x82f63b78) of n bytes, the checksum of TFRecord framing. */
uint32_t tb_crc32c(const void *data, size_t n);

#endif

// NCCL collectives of the CUDA backend (signatures of the Backend table's comm fields).
#pragma once

#include <stddef.h>
#include <stdint.h>

extern const size_t cuda_comm_id_size;
void cuda_comm_create_id(void *id);
void cuda_comm_init(const void *id, int rank, int world);
void cuda_reduce_start(void *buf, int64_t lo, int64_t hi, const int64_t *ranges);
void cuda_allgather_start(void *buf, const int64_t *ranges);
void cuda_comm_wait();

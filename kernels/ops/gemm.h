// cuBLASLt setup (called once by backend_cuda).
#pragma once

void gemm_init();

// Dense matrix products through cuBLASLt: bf16 operands, fp32 accumulation, bf16 or fp32
// results, the bias add fused as an epilogue. Row-major [rows, cols] buffers are handed to
// cuBLASLt as their column-major transposes, so out[M,N] = x[M,K] w[N,K]^T is computed as
// out^T (N x M) = op_T(w^T) (N x K) * x^T (K x M).
#include <cublasLt.h>
#include <initializer_list>
#include <string.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "ops/gemm.h"
#include "util/error.h"

static cublasLtHandle_t lt;
static void *workspace;
static const size_t workspace_bytes = 32u << 20; // cuBLASLt's recommendation for Hopper

#define LT_CHECK(x)                                                                                \
    do {                                                                                           \
        cublasStatus_t _s = (x);                                                                   \
        if (_s != CUBLAS_STATUS_SUCCESS)                                                           \
            rt_die("cuBLASLt error %d (%s) in %s at %s:%d", (int)_s, cublasLtGetStatusString(_s),  \
                   #x, __FILE__, __LINE__);                                                        \
    } while (0)

void gemm_init() {
    LT_CHECK(cublasLtCreate(&lt));
    CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
}

// One matrix product D = alpha op(A) op(B) + beta D in column-major terms, optionally
// batched with strides, with a bias epilogue. Descriptors and the chosen algorithm are
// cached per shape: the model calls a few dozen distinct shapes thousands of times. With
// the variant gemm_algo:timed (src/device/kernel_variants.c) a plan keeps up to CANDIDATES of
// the heuristic's results, times them on its first call and keeps the fastest.
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc, batch, bias, accumulate;
    int64_t sa, sb, sc;
    cudaDataType_t dtype;
    int algo_variant; // kernel_variant(KV_GEMM_ALGO) when the plan was made
} GemmKey;

enum { CANDIDATES = 8, TIMED_CALLS = 3 };

typedef struct {
    GemmKey key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulAlgo_t candidates[CANDIDATES]; // [0] is the heuristic's first, algo until timed
    int ncandidates;
} GemmPlan;

static GemmPlan *plans;
static int n_plans, cap_plans;

static void set_batch(cublasLtMatrixLayout_t l, int batch, int64_t stride) {
    if (batch <= 1) return;
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                              sizeof batch));
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof stride));
}

static GemmPlan *plan_for(const GemmKey *key) {
    for (int i = 0; i < n_plans; i++)
        if (!memcmp(&plans[i].key, key, sizeof *key)) return &plans[i];
    if (n_plans == cap_plans) {
        cap_plans = cap_plans ? 2 * cap_plans : 64;
        plans = (GemmPlan *)rt_realloc(plans, sizeof(GemmPlan) * (size_t)cap_plans);
    }
    GemmPlan *p = &plans[n_plans];
    memset(p, 0, sizeof *p);
    p->key = *key;
    LT_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = key->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                      tb = key->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (key->bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        LT_CHECK(
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                                sizeof bt));
    }
    // stored shapes: op(A) is m x k, op(B) is k x n
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, key->ta ? key->k : key->m,
                                        key->ta ? key->m : key->k, key->lda));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, key->tb ? key->n : key->k,
                                        key->tb ? key->k : key->n, key->ldb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->c, key->dtype, key->m, key->n, key->ldc));
    set_batch(p->a, key->batch, key->sa);
    set_batch(p->b, key->batch, key->sb);
    set_batch(p->c, key->batch, key->sc);
    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace_bytes, sizeof workspace_bytes));
    // The plan is reused for any pointers: ask only for 16-byte alignment (the heuristic
    // otherwise assumes 256), which parameters, activations and per-head slices all have.
    const uint32_t align = 16;
    const cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (cublasLtMatmulPreferenceAttributes_t a : aligns)
        LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, a, &align, sizeof align));
    cublasLtMatmulHeuristicResult_t res[CANDIDATES];
    int found = 0;
    const int asked = key->algo_variant ? CANDIDATES : 1;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref, asked, res,
                                            &found));
    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (!found)
        rt_die("cuBLASLt has no algorithm for a %dx%dx%d product (transa %d, transb %d, batch %d)",
               key->m, key->n, key->k, key->ta, key->tb, key->batch);
    p->algo = res[0].algo;
    for (int i = 0; i < found; i++) p->candidates[i] = res[i].algo;
    p->ncandidates = found;
    n_plans++;
    return p;
}

// Bytes of D that a product writes: the last batch's last column's end.
static size_t d_extent(const GemmKey *k) {
    const size_t elem = k->dtype == CUDA_R_32F ? 4 : 2;
    return ((size_t)(k->batch > 1 ? k->batch - 1 : 0) * (size_t)k->sc +
            (size_t)(k->n - 1) * k->ldc + (size_t)k->m) *
           elem;
}

// gemm_algo:timed: each candidate run TIMED_CALLS times after one warm-up call on the plan's
// first operands, the fastest kept (a candidate cuBLASLt refuses is skipped). D is written by
// the trials, so where the product adds to D (beta = 1) it is saved first and put back.
static void time_candidates(GemmPlan *p, const void *A, const void *B, void *C, float beta) {
    cudaStream_t st = cuda_stream();
    const size_t bytes = d_extent(&p->key);
    void *saved = nullptr;
    if (beta != 0.f) {
        saved = cuda_alloc(bytes);
        CUDA_CHECK(cudaMemcpyAsync(saved, C, bytes, cudaMemcpyDeviceToDevice, st));
    }
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    float best = 0.f, alpha = 1.f;
    int chosen = 0;
    for (int i = 0; i < p->ncandidates; i++) {
        const cublasLtMatmulAlgo_t *algo = &p->candidates[i];
        if (cublasLtMatmul(lt, p->op, &alpha, A, p->a, B, p->b, &beta, C, p->c, C, p->c, algo,
                           workspace, workspace_bytes, st) != CUBLAS_STATUS_SUCCESS)
            continue;
        CUDA_CHECK(cudaEventRecord(e0, st));
        for (int r = 0; r < TIMED_CALLS; r++)
            LT_CHECK(cublasLtMatmul(lt, p->op, &alpha, A, p->a, B, p->b, &beta, C, p->c, C, p->c,
                                    algo, workspace, workspace_bytes, st));
        CUDA_CHECK(cudaEventRecord(e1, st));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i == 0 || ms < best) best = ms, chosen = i;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    if (saved) {
        CUDA_CHECK(cudaMemcpyAsync(C, saved, bytes, cudaMemcpyDeviceToDevice, st));
        cuda_release(saved);
    }
    p->algo = p->candidates[chosen];
    p->ncandidates = 0; // timed
}

static void gemm(const GemmKey *shape, const void *A, const void *B, void *C, const void *bias) {
    if (shape->m == 0 || shape->n == 0) return;
    for (const void *p : {A, B, (const void *)C, bias})
        if (p) cuda_check_aligned(p, 16, "matmul (cuBLASLt)");
    GemmKey key_v = *shape;
    key_v.algo_variant = kernel_variant(KV_GEMM_ALGO);
    const GemmKey *key = &key_v;
    GemmPlan *p = plan_for(key);
    if (bias)
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
    float alpha = 1.f, beta = key->accumulate ? 1.f : 0.f;
    if (p->ncandidates > 1) time_candidates(p, A, B, C, beta);
    LT_CHECK(cublasLtMatmul(lt, p->op, &alpha, A, p->a, B, p->b, &beta, C, p->c, C, p->c, &p->algo,
                            workspace, workspace_bytes, cuda_stream()));
}

// dbias[n] += sum over the M rows of dout[M, N] (bf16), in fp32: each block sums a
// 32-column strip over a slice of rows, then one atomic add per column and block.
__global__ void bias_grad_kernel(float *dbias, const bf16 *dout, int M, int N, int rows_per_block) {
    __shared__ float part[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    int r0 = blockIdx.y * rows_per_block, r1 = min(M, r0 + rows_per_block);
    float acc = 0.f;
    if (col < N)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) acc += bf2f(dout[(int64_t)r * N + col]);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < N) {
        float s = 0.f;
        for (int i = 0; i < 8; i++) s += part[i][threadIdx.x];
        atomicAdd(&dbias[col], s);
    }
}

void cuda_matmul_fwd(void *out, const void *x, const void *w, const void *bias, int M, int N,
                     int K) {
    GemmKey k = {};
    k.ta = 1, k.tb = 0, k.m = N, k.n = M, k.k = K, k.lda = K, k.ldb = K, k.ldc = N, k.batch = 1;
    k.bias = bias != NULL, k.dtype = CUDA_R_16BF;
    gemm(&k, w, x, out, bias);
}

void cuda_matmul_bwd(void *dx, void *dw, void *dbias, const void *dout, const void *x,
                     const void *w, int M, int N, int K, int accumulate) {
    if (dx) { // dx^T (K x M) = w^T (K x N) dout^T (N x M)
        GemmKey k = {};
        k.ta = 0, k.tb = 0, k.m = K, k.n = M, k.k = N, k.lda = K, k.ldb = N, k.ldc = K, k.batch = 1;
        k.accumulate = accumulate, k.dtype = CUDA_R_16BF;
        gemm(&k, w, dout, dx, NULL);
    }
    if (dw && M > 0) { // dw^T (K x N) += x^T (K x M) dout (M x N), fp32 result
        GemmKey k = {};
        k.ta = 0, k.tb = 1, k.m = K, k.n = N, k.k = M, k.lda = K, k.ldb = N, k.ldc = K, k.batch = 1;
        k.accumulate = 1, k.dtype = CUDA_R_32F;
        gemm(&k, x, dout, dw, NULL);
    }
    if (dbias && M > 0) {
        int rows = 256;
        dim3 grid((unsigned)cdiv(N, 32), (unsigned)cdiv(M, rows)), block(32, 8);
        bias_grad_kernel<<<grid, block, 0, cuda_stream()>>>((float *)dbias, (const bf16 *)dout, M,
                                                            N, rows);
        CUDA_LAUNCHED();
    }
}

// Per-head products, batched over the H heads: x [N, H, Din] (head h at column offset
// h*Din, row stride H*Din), w [H, Din, P], out [N, H, P].
void cuda_head_matmul_fwd(void *out, const void *x, const void *w, int64_t N, int H, int Din,
                          int P) {
    // out_h^T (P x N) = w_h^T (P x Din) x_h^T (Din x N); w_h row-major [Din, P] is
    // column-major P x Din with ld P
    GemmKey k = {};
    k.ta = 0, k.tb = 0, k.m = P, k.n = (int)N, k.k = Din, k.lda = P, k.ldb = H * Din, k.ldc = H * P;
    k.batch = H, k.sa = (int64_t)Din * P, k.sb = Din, k.sc = P, k.dtype = CUDA_R_16BF;
    gemm(&k, w, x, out, NULL);
}

void cuda_head_matmul_bwd(void *dx, void *dw, const void *dout, const void *x, const void *w,
                          int64_t N, int H, int Din, int P, int accumulate) {
    if (dx) { // dx_h^T (Din x N) = w_h (Din x P as op_T of the P x Din view) dout_h^T (P x N)
        GemmKey k = {};
        k.ta = 1, k.tb = 0, k.m = Din, k.n = (int)N, k.k = P, k.lda = P, k.ldb = H * P,
        k.ldc = H * Din;
        k.batch = H, k.sa = (int64_t)Din * P, k.sb = P, k.sc = Din, k.accumulate = accumulate;
        k.dtype = CUDA_R_16BF;
        gemm(&k, w, dout, dx, NULL);
    }
    if (dw && N > 0) { // dw_h^T (P x Din) += dout_h^T (P x N) x_h (N x Din), fp32 result
        GemmKey k = {};
        k.ta = 0, k.tb = 1, k.m = P, k.n = Din, k.k = (int)N, k.lda = H * P, k.ldb = H * Din,
        k.ldc = P;
        k.batch = H, k.sa = P, k.sb = Din, k.sc = (int64_t)Din * P, k.accumulate = 1;
        k.dtype = CUDA_R_32F;
        gemm(&k, dout, x, dw, NULL);
    }
}

/* The launch census: a stand-in for the CUDA runtime and cuBLASLt, loaded with LD_PRELOAD into
 * a program of the CUDA build (bench/gpu_mixers, bench/step_bench), that lets it run without a
 * GPU and records what it asks the GPU to do instead of doing it. scripts/kernel_report.sh
 * runs it (docs/gpu.md "Kernel resources").
 *
 * The program sees one H100-like device (sm_90, 132 SMs, 228 KiB of shared memory per SM,
 * 227 KiB opt-in per block, 80 GiB, no memory pools: the backend allocates with cudaMalloc).
 * Device memory is zero-filled host memory, copies and memsets act on it, streams and events
 * are dummies, and no kernel runs: each launch prints a line to the program's stdout,
 *   census launch MANGLED grid=X,Y,Z block=X,Y,Z smem=DYNAMIC_BYTES
 * each cuBLASLt product one line with its column-major shape,
 *   census gemm m=M n=N k=K batch=B out=bf16|f32
 * and each occupancy query the answer it got, computed from the kernel's resources,
 *   census occupancy MANGLED threads=T smem=S blocks=N
 * A launch the runtime would refuse (a block over 1024 threads or over its __launch_bounds__,
 * too many registers, a grid dimension out of range, dynamic shared memory over 48 KiB that
 * cudaFuncSetAttribute did not allow, or over what a block may have) prints
 *   census refused MANGLED grid=... block=... smem=...: WHY
 * and fails as the launch would (cudaGetLastError). Outputs stay zero unless uploaded, so
 * the programs' finiteness checks pass.
 *
 * ROTOR_CENSUS_RESOURCES names a file of the kernels' resources, one "MANGLED REGISTERS
 * STATIC_SMEM MAX_THREADS" line each (0: no __launch_bounds__), from ptxas; without it a
 * launch is checked on its shape alone and an occupancy query is an error. A runtime function
 * the programs use that is not stood in for here (memory pools, cudaMallocAsync) exits 3
 * naming it; scripts/kernel_report.sh refuses a program that imports one this file lacks. */
#define _GNU_SOURCE
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The H100 SXM's limits (kernel_report.sh's occupancy() uses the same numbers). */
enum {
    SMS = 132,
    SMEM_PER_SM = 228 * 1024,
    SMEM_OPTIN = 227 * 1024,
    SMEM_DEFAULT = 48 * 1024,
    SMEM_RESERVED = 1024, /* per block */
    REGS_PER_SM = 65536,
    REG_UNIT = 256, /* registers are allocated per warp in units of 256 */
    MAX_WARPS = 64,
    MAX_BLOCKS = 32,
};
static const size_t TOTAL_MEM = (size_t)80 << 30;

static void unsupported(const char *what) {
    fflush(stdout);
    fprintf(stderr, "launch census: %s is not stood in for (bench/launch_census.c)\n", what);
    exit(3);
}

static cudaError_t last_error;

static cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}

/* ---- kernels: registration, resources, occupancy ---- */

typedef struct {
    const void *host_fun; /* the launch stub's address: what launches and attributes name */
    const char *name;     /* mangled */
    int have_resources, regs, max_threads;
    size_t static_smem, max_dynamic_smem;
} Kernel;

static Kernel *kernels;
static int nkernels, cap_kernels;

static int resources_read;

static void read_resources(void) {
    resources_read = 1;
    const char *path = getenv("ROTOR_CENSUS_RESOURCES");
    if (!path) return;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "launch census: cannot read ROTOR_CENSUS_RESOURCES=%s\n", path);
        exit(3);
    }
    char name[4096];
    int regs, max_threads;
    size_t smem;
    while (fscanf(f, "%4095s %d %zu %d", name, &regs, &smem, &max_threads) == 4)
        for (int i = 0; i < nkernels; i++)
            if (!strcmp(kernels[i].name, name)) {
                kernels[i].have_resources = 1;
                kernels[i].regs = regs, kernels[i].static_smem = smem;
                kernels[i].max_threads = max_threads;
            }
    fclose(f);
}

static Kernel *kernel_of(const void *host_fun) {
    if (!resources_read) read_resources();
    for (int i = 0; i < nkernels; i++)
        if (kernels[i].host_fun == host_fun) return &kernels[i];
    unsupported("a kernel that was not registered");
    return NULL;
}

/* Blocks per SM at `threads` per block and `smem` bytes of shared memory (static + dynamic). */
static int blocks_per_sm(int regs, size_t smem, int threads) {
    int warps = (threads + 31) / 32, blocks = MAX_WARPS / warps;
    if (regs) {
        int per_warp = (regs * 32 + REG_UNIT - 1) / REG_UNIT * REG_UNIT;
        int by_regs = REGS_PER_SM / per_warp / warps;
        if (by_regs < blocks) blocks = by_regs;
    }
    int by_smem = (int)(SMEM_PER_SM / (smem + SMEM_RESERVED));
    if (by_smem < blocks) blocks = by_smem;
    return blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS;
}

void **__cudaRegisterFatBinary(void *fat_cubin) {
    static void *handle;
    return &handle;
}

void __cudaRegisterFatBinaryEnd(void **handle) {}
void __cudaUnregisterFatBinary(void **handle) {}
/* __device__ variables (CUTLASS's): their host shadows stay as they are */
void __cudaRegisterVar(void **handle, char *host_var, char *device_address, const char *device_name,
                       int ext, size_t size, int constant, int global) {}

void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
                            const char *device_name, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bdim, dim3 *gdim, int *wsize) {
    if (nkernels == cap_kernels) {
        cap_kernels = cap_kernels ? 2 * cap_kernels : 256;
        kernels = realloc(kernels, sizeof(Kernel) * (size_t)cap_kernels);
        if (!kernels) unsupported("so many kernels");
    }
    kernels[nkernels++] =
        (Kernel){.host_fun = host_fun, .name = device_name, .max_dynamic_smem = SMEM_DEFAULT};
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    Kernel *k = kernel_of(func);
    /* the report assumes the largest carveout (228 KiB per SM) anyway */
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout)
        return value >= -1 && value <= 100 ? cudaSuccess : fail(cudaErrorInvalidValue);
    /* CUTLASS's cluster launches set it; the census allows clusters of up to 8 blocks anyway */
    if (attr == cudaFuncAttributeNonPortableClusterSizeAllowed)
        return value == 0 || value == 1 ? cudaSuccess : fail(cudaErrorInvalidValue);
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
        unsupported("a cudaFuncSetAttribute other than cudaFuncAttributeMaxDynamicSharedMemorySize, "
                    "cudaFuncAttributePreferredSharedMemoryCarveout and "
                    "cudaFuncAttributeNonPortableClusterSizeAllowed");
    if (value < 0 || (size_t)value + k->static_smem > SMEM_OPTIN)
        return fail(cudaErrorInvalidValue);
    k->max_dynamic_smem = (size_t)value;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *blocks, const void *func,
                                                                   int threads, size_t smem,
                                                                   unsigned int flags) {
    Kernel *k = kernel_of(func);
    if (!k->have_resources) {
        fflush(stdout);
        fprintf(stderr,
                "launch census: an occupancy query for %s, whose resources "
                "ROTOR_CENSUS_RESOURCES does not give\n",
                k->name);
        exit(3);
    }
    *blocks = blocks_per_sm(k->regs, k->static_smem + smem, threads);
    printf("census occupancy %s threads=%d smem=%zu blocks=%d\n", k->name, threads, smem, *blocks);
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func, int threads,
                                                         size_t smem) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, threads, smem, 0);
}

/* ---- launches ---- */

typedef struct {
    dim3 grid, block;
    size_t smem;
} LaunchConfig;

static _Thread_local LaunchConfig pushed[4];
static _Thread_local int npushed;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, struct CUstream_st *s) {
    if (npushed == 4) unsupported("nested launch configurations this deep");
    pushed[npushed++] = (LaunchConfig){grid, block, smem};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *smem, void *stream) {
    if (!npushed) unsupported("a launch without a configuration");
    LaunchConfig c = pushed[--npushed];
    *grid = c.grid, *block = c.block, *smem = c.smem;
    *(cudaStream_t *)stream = 0;
    return cudaSuccess;
}

/* Why the runtime would refuse the launch, or NULL. */
static const char *refusal(const Kernel *k, dim3 g, dim3 b, size_t smem, cudaError_t *e) {
    unsigned threads = b.x * b.y * b.z;
    *e = cudaErrorInvalidConfiguration;
    if (!g.x || !g.y || !g.z || g.y > 65535 || g.z > 65535) return "grid dimension out of range";
    if (!threads || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64)
        return "block dimension out of range";
    *e = cudaErrorInvalidValue;
    if (smem > k->max_dynamic_smem)
        return smem > SMEM_DEFAULT ? "dynamic shared memory over 48 KiB not allowed by "
                                     "cudaFuncSetAttribute"
                                   : "dynamic shared memory over what cudaFuncSetAttribute set";
    if (smem + k->static_smem > SMEM_OPTIN) return "shared memory over 227 KiB per block";
    *e = cudaErrorLaunchOutOfResources;
    if (k->max_threads && threads > (unsigned)k->max_threads)
        return "more threads than the kernel's __launch_bounds__";
    if (k->have_resources && !blocks_per_sm(k->regs, 0, (int)threads))
        return "too many registers for the block";
    return NULL;
}

static cudaError_t record_launch(const Kernel *k, dim3 g, dim3 b, size_t smem) {
    cudaError_t e;
    const char *why = refusal(k, g, b, smem, &e);
    printf("census %s %s grid=%u,%u,%u block=%u,%u,%u smem=%zu%s%s\n", why ? "refused" : "launch",
           k->name, g.x, g.y, g.z, b.x, b.y, b.z, smem, why ? ": " : "", why ? why : "");
    if (why) {
        fflush(stdout);
        fprintf(stderr, "launch census: %s refused: %s\n", k->name, why);
        return fail(e);
    }
    return cudaSuccess;
}

/* CUDA 13's <<<>>>: the stub asks for a handle once, then launches with it. */
cudaError_t __cudaGetKernel(cudaKernel_t *handle, const void *func) {
    *handle = (cudaKernel_t)kernel_of(func);
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t handle, dim3 grid, dim3 block, void **args, size_t smem,
                               cudaStream_t stream) {
    return record_launch((const Kernel *)handle, grid, block, smem);
}

/* CUDA 12's <<<>>> and explicit launches */
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t stream) {
    return record_launch(kernel_of(func), grid, block, smem);
}

/* Launches with attributes (CUTLASS's, with a thread block cluster): the grid must be a whole
 * number of clusters of at most 8 blocks. */
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *func, void **args) {
    const Kernel *k = kernel_of(func);
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id != cudaLaunchAttributeClusterDimension) continue;
        unsigned x = c->attrs[i].val.clusterDim.x, y = c->attrs[i].val.clusterDim.y,
                 z = c->attrs[i].val.clusterDim.z;
        if (!x || !y || !z || x * y * z > 8 || c->gridDim.x % x || c->gridDim.y % y ||
            c->gridDim.z % z) {
            printf("census refused %s grid=%u,%u,%u block=%u,%u,%u smem=%zu: cluster %ux%ux%u\n",
                   k->name, c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x, c->blockDim.y,
                   c->blockDim.z, c->dynamicSmemBytes, x, y, z);
            return fail(cudaErrorInvalidClusterSize);
        }
    }
    return record_launch(k, c->gridDim, c->blockDim, c->dynamicSmemBytes);
}

/* The driver's tensor map encoding (CUTLASS's TMA descriptors, asked for by name): a zeroed
 * map, no checks. */
static CUresult encode_tensor_map(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                  void *addr, const cuuint64_t *dims, const cuuint64_t *strides,
                                  const cuuint32_t *box, const cuuint32_t *elem_strides,
                                  CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    memset(map, 0, sizeof *map);
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status) {
    if (strcmp(symbol, "cuTensorMapEncodeTiled")) {
        fprintf(stderr, "launch census: no stand-in for the driver's %s\n", symbol);
        exit(3);
    }
    *fn = (void *)encode_tensor_map;
    if (status) *status = cudaDriverEntryPointSuccess;
    return cudaSuccess;
}

/* ---- the device ---- */

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }

cudaError_t cudaGetDevice(int *dev) {
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "NVIDIA H100 80GB HBM3 (launch census, nothing runs)");
    p->totalGlobalMem = TOTAL_MEM;
    p->sharedMemPerBlock = SMEM_DEFAULT;
    p->sharedMemPerBlockOptin = SMEM_OPTIN;
    p->sharedMemPerMultiprocessor = SMEM_PER_SM;
    p->reservedSharedMemPerBlock = SMEM_RESERVED;
    p->regsPerBlock = p->regsPerMultiprocessor = REGS_PER_SM;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff, p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9, p->minor = 0;
    p->multiProcessorCount = SMS;
    p->maxThreadsPerMultiProcessor = 32 * MAX_WARPS;
    p->maxBlocksPerMultiProcessor = MAX_BLOCKS;
    p->l2CacheSize = 50 << 20;
    p->memoryBusWidth = 5120;
    p->concurrentKernels = p->unifiedAddressing = p->streamPrioritiesSupported = 1;
    p->memoryPoolsSupported = 0;
    return dev == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int dev) {
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *v = SMS; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = SMEM_OPTIN; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = SMEM_PER_SM; break;
    case cudaDevAttrMemoryPoolsSupported: *v = 0; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    default: unsupported("this cudaDeviceGetAttribute attribute");
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    *least = 0, *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    default: return "cudaError (launch census)";
    }
}

const char *cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error" : "refused by the launch census (see its stdout)";
}

/* ---- memory: zero-filled host pages ---- */

typedef struct {
    char *p;
    size_t bytes;
} Allocation;

static Allocation *allocs;
static int nallocs, cap_allocs;
static size_t in_use;

cudaError_t cudaMalloc(void **p, size_t bytes) {
    size_t mapped = bytes ? bytes : 1;
    if (in_use + mapped > TOTAL_MEM) return fail(cudaErrorMemoryAllocation);
    void *m = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    if (nallocs == cap_allocs) {
        cap_allocs = cap_allocs ? 2 * cap_allocs : 1024;
        allocs = realloc(allocs, sizeof(Allocation) * (size_t)cap_allocs);
        if (!allocs) unsupported("so many allocations");
    }
    allocs[nallocs++] = (Allocation){m, mapped};
    in_use += mapped;
    *p = m;
    return cudaSuccess;
}

static int allocation_of(const void *p) {
    for (int i = nallocs - 1; i >= 0; i--)
        if ((const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].bytes)
            return i;
    return -1;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    int i = allocation_of(p);
    if (i < 0 || allocs[i].p != p) return fail(cudaErrorInvalidValue);
    munmap(allocs[i].p, allocs[i].bytes);
    in_use -= allocs[i].bytes;
    allocs[i] = allocs[--nallocs];
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    *free_bytes = TOTAL_MEM - in_use, *total = TOTAL_MEM;
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    memset(a, 0, sizeof *a);
    a->type = allocation_of(p) >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    a->devicePointer = (void *)p;
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
    memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    memset(p, value, bytes);
    return cudaSuccess;
}

/* Page-locked host memory (checkpoint staging, Backend.host_alloc): ordinary host memory. */
cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *p) {
    free(p);
    return cudaSuccess;
}

/* The device has no memory pools (cudaDevAttrMemoryPoolsSupported 0). */
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
    unsupported("cudaMallocAsync");
    return cudaErrorNotSupported;
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
    unsupported("cudaFreeAsync");
    return cudaErrorNotSupported;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev) {
    unsupported("cudaDeviceGetDefaultMemPool");
    return cudaErrorNotSupported;
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr a, void *v) {
    unsupported("cudaMemPoolGetAttribute");
    return cudaErrorNotSupported;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr a, void *v) {
    unsupported("cudaMemPoolSetAttribute");
    return cudaErrorNotSupported;
}

/* ---- streams and events: nothing is queued, so nothing waits ---- */

static char dummy_handles[1];

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    *s = (cudaStream_t)dummy_handles;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority) {
    *s = (cudaStream_t)dummy_handles;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = (cudaEvent_t)dummy_handles;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    return cudaEventCreate(e);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t begin, cudaEvent_t end) {
    *ms = 0.f;
    return cudaSuccess;
}

/* ---- cuBLASLt: products recorded by shape ---- */

typedef struct {
    cudaDataType type;
    uint64_t rows, cols;
    int32_t batch;
} Layout;

typedef struct {
    int32_t transa;
} MatmulDesc;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = (cublasLtHandle_t)dummy_handles;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_NOT_SUPPORTED";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    MatmulDesc *m = calloc(1, sizeof *m);
    *d = (cublasLtMatmulDesc_t)m;
    return m ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size) {
    if (attr == CUBLASLT_MATMUL_DESC_TRANSA)
        memcpy(&((MatmulDesc *)d)->transa, buf, sizeof(int32_t));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    Layout *m = malloc(sizeof *m);
    if (!m) return CUBLAS_STATUS_ALLOC_FAILED;
    *m = (Layout){type, rows, cols, 1};
    *l = (cublasLtMatrixLayout_t)m;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
    if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
        memcpy(&((Layout *)l)->batch, buf, sizeof(int32_t));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = (cublasLtMatmulPreference_t)dummy_handles;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
    memset(results, 0, sizeof *results);
    *returned = requested > 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* D (m x n) = op(A) (m x k) op(B) (k x n), column-major; A stored k x m when transposed. */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t a, const void *B,
                              cublasLtMatrixLayout_t b, const void *beta, const void *C,
                              cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws,
                              cudaStream_t stream) {
    const Layout *la = (const Layout *)a, *ld = (const Layout *)d;
    uint64_t k = ((const MatmulDesc *)desc)->transa ? la->rows : la->cols;
    printf("census gemm m=%llu n=%llu k=%llu batch=%d out=%s\n", (unsigned long long)ld->rows,
           (unsigned long long)ld->cols, (unsigned long long)k, ld->batch,
           ld->type == CUDA_R_32F ? "f32" : "bf16");
    return CUBLAS_STATUS_SUCCESS;
}

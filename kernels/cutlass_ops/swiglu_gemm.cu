// swiglu_gemm:cutlass (src/device/kernel_variants.c): the MLP's gated products as CUTLASS 3
// Hopper GEMMs (TMA loads, wgmma, two consumer warp groups on one 128 x 128 tile, persistent
// blocks) whose epilogue visitor trees do gate_mul's work on the accumulators, so that neither
// the up product's value nor the down projection's input gradient makes a trip through memory
// to be gated (docs/gpu.md "Kernel variants").
//
//   matmul_gate_mul_fwd: acc = x w^T (w [N, K] K-major); y = bf16(acc); out = y * swish(g)
//   gate_mul_matmul_dx:  acc = dout w (w [N, K] read as the K x N operand, N-major);
//                        d = bf16(acc); dx = d swish(g); dg = d x swish'(g); p = x swish(g)
//
// Each value is rounded where the pair of kernels rounds it (the product to bf16 before the
// gate, every output once) and formed by the same expression as gate_mul's (lib/gate_act.cuh),
// so the two differ only by the products' summation order. Only swish gates, K and N multiples
// of 8 and 16-byte aligned buffers (TMA), on a device of compute capability 9.0.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "cutlass_ops/swiglu_gemm.h"
#include "lib/cuda_common.cuh"
#include "lib/gate_act.cuh"

using namespace cute;
namespace fusion = cutlass::epilogue::fusion;

namespace {

using Bf16 = cutlass::bfloat16_t;
using RowMajor = cutlass::layout::RowMajor;
using ColumnMajor = cutlass::layout::ColumnMajor;
constexpr int kAlign = 8; // bf16 elements in 16 bytes

// ---- the epilogue's elementwise functions, on fragments of fp32 values ----

// The product as the pair stores it: rounded to bf16 (and back, for the gate's expression).
template <class A> struct RoundToBf16 {
    CUTLASS_DEVICE A operator()(A const &v) const {
        A r;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < A::kElements; ++i) r[i] = bf2f(f2bf(v[i]));
        return r;
    }
};

// x swish(g): gate_mul's product (GateMulFwd, and dx = d swish(g) of GateMulBwd)
template <class A> struct SwishGate {
    CUTLASS_DEVICE A operator()(A const &g, A const &x) const {
        A r;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < A::kElements; ++i) r[i] = x[i] * act_value(g[i], ACT_SILU);
        return r;
    }
};

// d x swish'(g): the gate's gradient (GateMulBwd's dg)
template <class A> struct SwishGateGrad {
    CUTLASS_DEVICE A operator()(A const &d, A const &x, A const &g) const {
        A r;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < A::kElements; ++i) r[i] = d[i] * x[i] * act_deriv(g[i], ACT_SILU);
        return r;
    }
};

// ---- the kernels ----

using ClusterShape = Shape<_2, _1, _1>;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using StrideMN = cutlass::detail::TagToStrideC_t<RowMajor>; // [M, N] row-major, as every aux
template <template <class> class Fn, class Out = float>
using Compute = fusion::Sm90Compute<Fn, Out, float, cutlass::FloatRoundStyle::round_to_nearest>;

// Both products at one tile shape (M x N x K of a block's step).
template <class TileShape> struct Kernels {
    using EpiDesc = cutlass::epilogue::collective::detail::EpilogueDescriptor<
        TileShape, cutlass::epilogue::collective::EpilogueTileAuto, void, Bf16, EpiSchedule>;
    using LoadDesc =
        cutlass::epilogue::collective::detail::AuxLoadDescriptor<EpiDesc, RowMajor, Bf16>;
    using StoreDesc =
        cutlass::epilogue::collective::detail::AuxStoreDescriptor<EpiDesc, RowMajor, Bf16>;
    using Load =
        fusion::Sm90AuxLoad<LoadDesc::Stages, typename LoadDesc::EpilogueTile, Bf16, StrideMN,
                            typename LoadDesc::SmemLayoutAtom, typename LoadDesc::CopyOpS2R>;
    using Store =
        fusion::Sm90AuxStore<StoreDesc::Stages, typename StoreDesc::EpilogueTile, Bf16,
                             cutlass::FloatRoundStyle::round_to_nearest, StrideMN,
                             typename StoreDesc::SmemLayoutAtom, typename StoreDesc::CopyOpR2S>;

    // The forward's graph, nodes in topological order (the last one's value is D = out):
    //   0 acc   1 y = bf16(acc)   2 store y   3 load g   4 out = y swish(g)
    using FwdTree = fusion::Sm90TopologicalVisitor<
        float, cute::tuple<cute::seq<>, cute::seq<0>, cute::seq<1>, cute::seq<>, cute::seq<3, 1>>,
        fusion::Sm90AccFetch, Compute<RoundToBf16>, Store, Load, Compute<SwishGate, Bf16>>;

    // The backward's (D = dx):
    //   0 acc   1 d = bf16(acc)   2 load g   3 load x   4 dg = d x swish'(g)   5 store dg
    //   6 p = x swish(g)   7 store p   8 dx = d swish(g)
    using DxTree = fusion::Sm90TopologicalVisitor<
        float,
        cute::tuple<cute::seq<>, cute::seq<0>, cute::seq<>, cute::seq<>, cute::seq<1, 3, 2>,
                    cute::seq<4>, cute::seq<2, 3>, cute::seq<6>, cute::seq<2, 1>>,
        fusion::Sm90AccFetch, Compute<RoundToBf16>, Load, Load, Compute<SwishGateGrad>, Store,
        Compute<SwishGate>, Store, Compute<SwishGate, Bf16>>;

    // A GEMM of bf16 A [M, K] row-major and B of layout LayoutB, fp32 accumulators, D [M, N]
    // bf16 row-major through the epilogue tree; the mainloop's stages fill what the
    // epilogue leaves of the shared memory.
    template <class LayoutB, class Tree> struct GatedGemm {
        using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
            cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
            cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, RowMajor, kAlign,
            Bf16, RowMajor, kAlign, EpiSchedule, Tree>::CollectiveOp;
        using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
            cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Bf16, RowMajor, kAlign, Bf16,
            LayoutB, kAlign, float, TileShape, ClusterShape,
            cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
                sizeof(typename Epilogue::SharedStorage))>,
            MainSchedule>::CollectiveOp;
        using Kernel =
            cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
        using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
    };
    // forward: B = w [N, K] row-major, the K x N operand column-major (K-major)
    using Fwd = typename GatedGemm<ColumnMajor, FwdTree>::Gemm;
    // input gradient dout w: B = w [N, K] row-major is the GEMM's K x N operand as it lies
    // (its K is the product's output width N): row-major, N-major
    using Dx = typename GatedGemm<RowMajor, DxTree>::Gemm;
};
using TileN128 = Kernels<Shape<_128, _128, _64>>;
using TileN256 = Kernels<Shape<_128, _256, _64>>;

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Whether the device is a compute capability 9.0 one (the kernels are built for sm_90a only).
bool on_sm90() {
    static int cc = -1;
    if (cc < 0) {
        int dev, major, minor;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        cc = major * 10 + minor;
    }
    return cc == 90;
}

cutlass::KernelHardwareInfo hw_info() {
    static cutlass::KernelHardwareInfo hw = [] {
        cutlass::KernelHardwareInfo h;
        CUDA_CHECK(cudaGetDevice(&h.device_id));
        h.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(h.device_id);
        return h;
    }();
    return hw;
}

// Runs gemm on args, its workspace from the backend's scratch; dies naming op on an error.
template <class Gemm> void launch(const typename Gemm::Arguments &args, const char *op) {
    Gemm gemm;
    cutlass::Status s = gemm.can_implement(args);
    if (s != cutlass::Status::kSuccess)
        rt_die("%s: CUTLASS cannot run this shape (%s)", op, cutlassGetStatusString(s));
    size_t ws = Gemm::get_workspace_size(args);
    void *workspace = ws ? cuda_scratch(SCRATCH_F, ws) : nullptr;
    s = gemm.initialize(args, workspace, cuda_stream());
    if (s == cutlass::Status::kSuccess) s = gemm.run(cuda_stream());
    if (s != cutlass::Status::kSuccess) rt_die("%s: CUTLASS: %s", op, cutlassGetStatusString(s));
    CUDA_LAUNCHED();
}

const char *unsupported(Activation act, int N, int K, std::initializer_list<const void *> ptrs) {
    if (act != ACT_SILU) return "only swish gates";
    if (N % kAlign || K % kAlign) return "N and K must be multiples of 8";
    for (const void *p : ptrs)
        if (!aligned16(p)) return "buffers must be 16-byte aligned";
    if (!on_sm90()) return "needs a compute capability 9.0 device";
    return nullptr;
}

// The arguments of the product D [M, N] = A [M, K] B (B as Gemm's layout takes it), packed
// row-major, without the epilogue tree's own.
template <class Gemm>
typename Gemm::Arguments product_args(int M, int N, int K, const void *A, const void *B, void *D) {
    using Kernel = typename Gemm::GemmKernel;
    auto sA = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, {M, K, 1});
    auto sB = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, {N, K, 1});
    auto sD = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, {M, N, 1});
    return {cutlass::gemm::GemmUniversalMode::kGemm,
            {M, N, K, 1},
            {(const Bf16 *)A, sA, (const Bf16 *)B, sB},
            {{}, nullptr, sD, (Bf16 *)D, sD},
            hw_info()};
}

template <class K> void run_fwd(const MatmulGateMulArgs *a) {
    auto args = product_args<typename K::Fwd>(a->M, a->N, a->K, a->x, a->w, a->out);
    StrideMN s = cutlass::make_cute_packed_stride(StrideMN{}, {a->M, a->N, 1});
    args.epilogue.thread = {{},                               // 0 acc
                            {},                               // 1 round
                            {(Bf16 *)a->y, s},                // 2 store y
                            {(const Bf16 *)a->g, Bf16(0), s}, // 3 load g
                            {}};                              // 4 out
    launch<typename K::Fwd>(args, "matmul_gate_mul_fwd (swiglu_gemm:cutlass)");
}

// The GEMM [M, K] = dout [M, N] w [N, K]: its M, N, K are our M, K, N.
template <class K> void run_dx(const GateMulMatmulDx *a) {
    auto args = product_args<typename K::Dx>(a->M, a->K, a->N, a->dout, a->w, a->dx);
    StrideMN s = cutlass::make_cute_packed_stride(StrideMN{}, {a->M, a->K, 1});
    args.epilogue.thread = {{},                               // 0 acc
                            {},                               // 1 round
                            {(const Bf16 *)a->g, Bf16(0), s}, // 2 load g
                            {(const Bf16 *)a->x, Bf16(0), s}, // 3 load x
                            {},                               // 4 dg
                            {(Bf16 *)a->dg, s},               // 5 store dg
                            {},                               // 6 p
                            {(Bf16 *)a->p, s},                // 7 store p
                            {}};                              // 8 dx
    launch<typename K::Dx>(args, "gate_mul_matmul_dx (swiglu_gemm:cutlass)");
}

} // namespace

int cutlass_matmul_gate_mul_fwd(const MatmulGateMulArgs *a, SwigluTile tile, const char **why) {
    if ((*why = unsupported(a->act, a->N, a->K, {a->x, a->w, a->g, a->y, a->out}))) return 0;
    tile == SWIGLU_N256 ? run_fwd<TileN256>(a) : run_fwd<TileN128>(a);
    return 1;
}

int cutlass_gate_mul_matmul_dx(const GateMulMatmulDx *a, SwigluTile tile, const char **why) {
    if ((*why = unsupported(a->act, a->K, a->N, {a->dout, a->w, a->x, a->g, a->dx, a->dg, a->p})))
        return 0;
    tile == SWIGLU_N256 ? run_dx<TileN256>(a) : run_dx<TileN128>(a);
    return 1;
}

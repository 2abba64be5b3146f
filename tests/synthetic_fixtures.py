"""Synthetic fixtures for what no real trace here has (issue 14, issue 37): an MTIA trace, cuDNN's
CUTLASS convolution kernels and a ROCm trace (an MI300X: Tensile, MIOpen and composable-kernel
kernels, ROCm's ``deviceProperties`` keys of kineto #927). They are SYNTHETIC: small, hand-built
Kineto-style traces whose categories, fields and kernel names follow what Kineto and cuDNN write
(Kineto's activity names ``mtia_runtime`` / ``mtia_ccp_events``; CUTLASS 2.x's
``ImplicitGemmConvolution`` with its ``Conv2dFprop``/``Conv2dDgrad``/``Conv2dWgrad`` iterators and
``conv::Operator`` 0/1/2, in cuDNN's ``cutlass__5x_cudnn`` namespace, and the generated-instance form
``cutlass_tensorop_…dgrad…``; roctracer's ``Memcpy <hipMemcpyKind> (<src> -> <dst>)``).

``python -m tests.synthetic_fixtures`` writes them to ``tests/fixtures/synthetic_*.json.gz``;
``tests/trace/test_synthetic_fixtures.py`` checks that the committed files are this module's output.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MTIA = FIXTURES / "synthetic_mtia.json.gz"
CUDNN_CONV = FIXTURES / "synthetic_cudnn_conv.json.gz"
ROCM = FIXTURES / "synthetic_rocm.json.gz"

Event = dict[str, Any]


def _x(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: Any) -> Event:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _meta(kind: str, pid: int, tid: int, **args: Any) -> Event:
    return {"name": kind, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _flow(correlation: int, call: Event, work: Event) -> list[Event]:
    """Kineto's ``ac2g`` flow from a launch call to the device work it launched."""
    return [
        {
            "ph": "s",
            "id": correlation,
            "pid": call["pid"],
            "tid": call["tid"],
            "ts": call["ts"],
            "cat": "ac2g",
            "name": "ac2g",
        },
        {
            "ph": "f",
            "id": correlation,
            "pid": work["pid"],
            "tid": work["tid"],
            "ts": work["ts"],
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        },
    ]


def _document(events: list[Event], devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "deviceProperties": devices,
        "record_shapes": 1,
        "with_stack": 0,
        "trace_id": "SYNTHETIC",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": events,
        "traceName": "synthetic",
    }


# ---- MTIA ----------------------------------------------------------------------------------------------

MTIA_PID, MTIA_TID, MTIA_DEVICE, MTIA_QUEUE = 2000, 2000, 0, 1


def mtia_trace() -> dict[str, Any]:
    """Two profiler steps on an MTIA device: ops launch ``mtia_ccp_events`` through ``mtia_runtime``
    calls (``args.correlation``); more CCP events have no launching call (device-side events)."""
    pid, tid = MTIA_PID, MTIA_TID
    events: list[Event] = [
        _meta("process_name", pid, 0, name="python3"),
        _meta("process_labels", pid, 0, labels="CPU"),
        _meta("thread_name", pid, tid, name=f"thread {tid} (python3)"),
        _meta("process_name", MTIA_DEVICE, 0, name="python3"),
        _meta("process_labels", MTIA_DEVICE, 0, labels=f"MTIA {MTIA_DEVICE}"),
        _meta("thread_name", MTIA_DEVICE, MTIA_QUEUE, name=f"queue {MTIA_QUEUE}"),
    ]
    correlation, external = 100, 1
    ops = [
        (
            "aten::mm",
            [[256, 512], [512, 256]],
            ["c10::BFloat16", "c10::BFloat16"],
            "mtia_gemm_bf16_256x256",
            21.5,
        ),
        (
            "aten::add_",
            [[256, 256], [256, 256], []],
            ["c10::BFloat16", "c10::BFloat16", "Scalar"],
            "mtia_eltwise_add_bf16",
            3.25,
        ),
        ("aten::relu", [[256, 256]], ["c10::BFloat16"], "mtia_eltwise_relu_bf16", 2.75),
        ("aten::view", [[256, 256], [2]], ["c10::BFloat16", "ScalarList"], None, 0.0),
    ]
    t = 100.0
    for step in (1, 2):
        start = t
        body: list[Event] = []
        t += 5.0
        for name, dims, types, kernel, kernel_us in ops:
            op = _x(
                "cpu_op",
                name,
                pid,
                tid,
                t,
                40.0,
                **{
                    "External id": external,
                    "Record function id": 0,
                    "Input Dims": dims,
                    "Input type": types,
                    "Ev Idx": external,
                },
            )
            body.append(op)
            if kernel is not None:
                call = _x(
                    "mtia_runtime",
                    "mtiaLaunchKernel",
                    pid,
                    tid,
                    t + 10.0,
                    12.0,
                    correlation=correlation,
                    **{"External id": external},
                )
                work = _x(
                    "mtia_ccp_events",
                    kernel,
                    MTIA_DEVICE,
                    MTIA_QUEUE,
                    t + 30.0,
                    kernel_us,
                    device=MTIA_DEVICE,
                    stream=MTIA_QUEUE,
                    correlation=correlation,
                    **{"External id": external},
                )
                body += [call, work, *_flow(correlation, call, work)]
                correlation += 1
            external += 1
            t += 50.0
        # device-side CCP events with no launching call on the host (firmware, queue management)
        for index in range(3):
            body.append(
                _x(
                    "mtia_ccp_events",
                    "ccp_queue_doorbell",
                    MTIA_DEVICE,
                    MTIA_QUEUE,
                    start + 7.0 + 60.0 * index,
                    0.5,
                    device=MTIA_DEVICE,
                    stream=MTIA_QUEUE,
                )
            )
        events.append(_x("user_annotation", f"ProfilerStep#{step}", pid, tid, start, t - start + 5.0))
        events += body
        t += 20.0
    return _document(events, devices=[])


# ---- cuDNN's CUTLASS convolutions ---------------------------------------------------------------------


def _cudnn_template_conv(operator: int) -> str:
    """A cuDNN-bundled CUTLASS 2.x implicit-GEMM convolution as Kineto writes it (demangled): the
    ``Conv2d{Fprop,Dgrad,Wgrad}`` iterators and ``(conv::Operator)N`` (0 fprop, 1 dgrad, 2 wgrad)."""
    ns = "cutlass__5x_cudnn"
    which = {0: "Fprop", 1: "Dgrad", 2: "Wgrad"}[operator]
    a_iter, b_iter = {
        0: ("Activation", "Filter"),
        1: ("OutputGradient", "Filter"),
        2: ("OutputGradient", "Activation"),
    }[operator]
    t = f"{ns}::bfloat16_t"
    thread_map = (
        f"{ns}::layout::PitchLinearWarpRakedThreadMap<{ns}::layout::PitchLinearShape<128, 32>, 128, "
        f"{ns}::layout::PitchLinearShape<4, 8>, 8>"
    )
    iterator = (
        f"{ns}::conv::threadblock::Conv2d{which}{{}}TileAccessIteratorOptimized<{ns}::MatrixShape<128, 32>, "
        f"{t}, {thread_map}, {ns}::AlignedArray<{t}, 8, 16> >"
    )
    smem = (
        f"{ns}::transform::threadblock::RegularTileAccessIterator<{ns}::MatrixShape<128, 32>, {t}, "
        f"{ns}::layout::ColumnMajorTensorOpMultiplicandCongruous<16, 64>, 1, {thread_map}, 16>"
    )
    mma = (
        f"{ns}::gemm::threadblock::MmaPolicy<{ns}::gemm::warp::MmaTensorOp<"
        f"{ns}::gemm::GemmShape<64, 64, 32>, {t}, "
        f"{ns}::layout::ColumnMajorTensorOpMultiplicandCongruous<16, 64>, {t}, "
        f"{ns}::layout::RowMajorTensorOpMultiplicandCongruous<16, 64>, float, {ns}::layout::RowMajor, "
        f"{ns}::gemm::warp::MmaTensorOpPolicy<{ns}::arch::Mma<{ns}::gemm::GemmShape<16, 8, 16>, 32, {t}, "
        f"{ns}::layout::RowMajor, {t}, {ns}::layout::ColumnMajor, float, {ns}::layout::RowMajor, "
        f"{ns}::arch::OpMultiplyAdd>, {ns}::MatrixShape<1, 1> >, 1>, {ns}::MatrixShape<0, 0>, "
        f"{ns}::MatrixShape<0, 0>, 1>"
    )
    mainloop = (
        f"{ns}::conv::threadblock::ImplicitGemmMultistage<{ns}::gemm::GemmShape<128, 128, 32>, "
        f"{iterator.format(a_iter)}, {smem}, ({ns}::arch::CacheOperation::Kind)0, {iterator.format(b_iter)}, "
        f"{smem}, ({ns}::arch::CacheOperation::Kind)0, {mma}, 3, bool>"
    )
    epilogue = (
        f"{ns}::epilogue::threadblock::Epilogue<{ns}::gemm::GemmShape<128, 128, 32>, "
        f"{ns}::gemm::warp::MmaTensorOp<{ns}::gemm::GemmShape<64, 64, 32>, float, {ns}::layout::RowMajor>, "
        f"1, float, 4>"
    )
    kernel = (
        f"{ns}::conv::kernel::ImplicitGemmConvolution<{mainloop}, {epilogue}, "
        f"{ns}::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, ({ns}::conv::Operator){operator}, "
        f"{ns}::conv::Conv2dProblemSize, ({ns}::conv::GroupMode)0>"
    )
    return f"void {ns}::Kernel<{kernel} >({kernel}::Params)"


CUDNN_FPROP = _cudnn_template_conv(0)
CUDNN_WGRAD = _cudnn_template_conv(2)
CUDNN_DGRAD = (
    "void cutlass__5x_cudnn::Kernel<"
    "cutlass_tensorop_bf16_s16816dgrad_optimized_bf16_128x128_32x3_nhwc_align8>"
    "(cutlass_tensorop_bf16_s16816dgrad_optimized_bf16_128x128_32x3_nhwc_align8::Params)"
)
CONV_PID, CONV_MAIN, CONV_AUTOGRAD = 3000, 3000, 3050
X_DIMS, W_DIMS = [8, 64, 56, 56], [128, 64, 3, 3]  # bf16 NCHW input, 3×3 filter, stride 1, pad 1


def cudnn_conv_trace() -> dict[str, Any]:
    """One training step of a bf16 3×3 convolution on an H200: the forward's fprop kernel on the main
    thread, the backward's dgrad and wgrad kernels from ``aten::convolution_backward`` on the
    autograd thread (``fwdbwd`` flow from the forward op)."""
    pid, main, grad = CONV_PID, CONV_MAIN, CONV_AUTOGRAD
    bf16 = "c10::BFloat16"
    out_dims = [8, 128, 56, 56]
    events: list[Event] = [
        _meta("process_name", pid, 0, name="python3"),
        _meta("thread_name", pid, main, name=f"thread {main} (python3)"),
        _meta("thread_name", pid, grad, name=f"thread {grad} (python3)"),
        _meta("thread_name", pid, grad, name=f"thread {grad} (pt_autograd_0)"),
        _meta("process_name", 0, 0, name="python3"),
        _meta("process_labels", 0, 0, labels="GPU 0"),
        _meta("thread_name", 0, 7, name="stream 7"),
    ]
    kernel_args = {
        "device": 0,
        "stream": 7,
        "registers": 168,
        "shared memory": 81920,
        "blocks per SM": 1.0,
        "warps per SM": 8.0,
        "block": [256, 1, 1],
        "est. achieved occupancy %": 12,
    }

    def launch(
        tid: int,
        at: float,
        correlation: int,
        external: int,
        kernel: str,
        start: float,
        dur: float,
        grid: list[int],
    ) -> list[Event]:
        call = _x(
            "cuda_runtime",
            "cudaLaunchKernel",
            pid,
            tid,
            at,
            6.0,
            correlation=correlation,
            **{"External id": external, "cbid": 211},
        )
        work = _x(
            "kernel",
            kernel,
            0,
            7,
            start,
            dur,
            correlation=correlation,
            grid=grid,
            **kernel_args,
            **{"External id": external},
        )
        return [call, work, *_flow(correlation, call, work)]

    step = _x("user_annotation", "ProfilerStep#1", pid, main, 1000.0, 900.0)
    train = _x("user_annotation", "train_step", pid, main, 1005.0, 880.0)
    conv_inputs = {
        "Input Dims": [X_DIMS, W_DIMS, [], [], [], [], [], [], []],
        "Input type": [
            bf16,
            bf16,
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
        ],
        "Concrete Inputs": ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"],
    }
    forward = [
        _x(
            "cpu_op",
            "aten::conv2d",
            pid,
            main,
            1010.0,
            60.0,
            **{
                "External id": 11,
                "Sequence number": 40,
                "Fwd thread id": 0,
                "Input Dims": [X_DIMS, W_DIMS, []],
                "Input type": [bf16, bf16, ""],
            },
        ),
        _x("cpu_op", "aten::convolution", pid, main, 1012.0, 56.0, **{"External id": 12}),
        _x("cpu_op", "aten::_convolution", pid, main, 1014.0, 52.0, **{"External id": 13}),
        _x(
            "cpu_op", "aten::cudnn_convolution", pid, main, 1016.0, 48.0, **{"External id": 14}, **conv_inputs
        ),
        *launch(main, 1040.0, 501, 14, CUDNN_FPROP, 1100.0, 48.0, [196, 1, 1]),
    ]
    # the backward, on the autograd thread while train_step is open
    backward = [
        _x(
            "cpu_op",
            "autograd::engine::evaluate_function: ConvolutionBackward0",
            pid,
            grad,
            1300.0,
            200.0,
            **{"External id": 20},
        ),
        _x(
            "cpu_op",
            "ConvolutionBackward0",
            pid,
            grad,
            1302.0,
            196.0,
            **{"External id": 21, "Sequence number": 40, "Fwd thread id": main},
        ),
        _x(
            "cpu_op",
            "aten::convolution_backward",
            pid,
            grad,
            1304.0,
            190.0,
            **{
                "External id": 22,
                "Input Dims": [out_dims, X_DIMS, W_DIMS, [], [], [], [], [], [], [], []],
                "Input type": [
                    bf16,
                    bf16,
                    bf16,
                    "ScalarList",
                    "ScalarList",
                    "ScalarList",
                    "ScalarList",
                    "Scalar",
                    "ScalarList",
                    "Scalar",
                    "ScalarList",
                ],
                "Concrete Inputs": [
                    "",
                    "",
                    "",
                    "[0]",
                    "[1, 1]",
                    "[1, 1]",
                    "[1, 1]",
                    "False",
                    "[0, 0]",
                    "1",
                    "[True, True, False]",
                ],
            },
        ),
        *launch(grad, 1330.0, 502, 22, CUDNN_DGRAD, 1400.0, 52.0, [196, 1, 1]),
        *launch(grad, 1360.0, 503, 22, CUDNN_WGRAD, 1460.0, 61.0, [1, 1, 72]),
    ]
    fwdbwd = [
        {"ph": "s", "id": 40, "pid": pid, "tid": main, "ts": 1010.0, "cat": "fwdbwd", "name": "fwdbwd"},
        {
            "ph": "f",
            "id": 40,
            "pid": pid,
            "tid": grad,
            "ts": 1302.0,
            "cat": "fwdbwd",
            "name": "fwdbwd",
            "bp": "e",
        },
    ]
    events += [step, train, *forward, *backward, *fwdbwd]
    h200 = {
        "id": 0,
        "name": "NVIDIA H200",
        "totalGlobalMem": 150109880320,
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "numSms": 132,
    }
    return _document(events, devices=[h200])


# ---- ROCm (an MI300X) ----------------------------------------------------------------------------------

ROCM_PID, ROCM_TID, ROCM_STREAM = 3000, 3000, 1
_BF16 = "ck_tile::bf16_t"
_FMHA = (
    "ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::BlockFmhaPipelineProblem<"
    f"{_BF16}, {_BF16}, {_BF16}, float, float, {_BF16}> >, ck_tile::Default2DEpilogue<"
    f"ck_tile::Default2DEpilogueProblem<float, {_BF16}, false, false, true> > >"
)
ROCM_KERNELS = {
    # hipBLASLt's TensileLite GEMM with a bias epilogue (aten::addmm), as PyTorch 2.x on ROCm 6 runs it
    "addmm": "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_CMS_SN_LDSB1_AFC1_AFEM1_"
    "ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSU0_GSUAMB_GLS0_ISA942_IU1_K1_"
    "LBSPPA2048_LBSPPB1024_LBSPPM0_LPA32_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT8_8_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_"
    "NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK3_TLDS1_ULSGRO0_USL1_UIOFGRO0_"
    "USFGROn1_VSn1_VWA8_VWB8_WSGRA0_WSGRB0_WS64_WG32_8_1",
    # rocBLAS's Tensile GEMM (aten::mm, fp16, A transposed)
    "mm": "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_ASE_"
    "ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW8_GSU1_GSUASB_GLS0_ISA942_"
    "IU1_K1_KLA_LBSPP128_LPA0_LPB8_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_"
    "NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA3_SS1_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_"
    "SNLL0_TT4_64_TLDS1_USFGROn1_VAW2_VSn1_VW4_WSGRA1_WSGRB1_WS64_WG32_4_1_WGM8",
    "batch_norm": "MIOpenBatchNormFwdTrainSpatial",
    "attention": f"void ck_tile::kentry<1, {_FMHA} >({_FMHA}::FmhaFwdGroupModeKargs)",
    "triton": "triton_poi_fused_mul_silu_0.kd",  # ROCm's descriptor symbol of an Inductor kernel
}
"""Kernel names as ROCm writes them: Tensile's ``Cijk_…`` (rocBLAS's, and hipBLASLt's with
``UserArgs``), MIOpen's, composable kernel's ``ck_tile::kentry<…>``, a ``.kd`` descriptor symbol."""
MI300X = {
    # kineto's ROCm deviceProperties (kineto #927: the CUDA set without regsPerMultiprocessor,
    # sharedMemPerBlockOptin and sharedMemPerMultiprocessor, with maxSharedMemoryPerMultiProcessor);
    # HIP reports gfx942 as compute capability 9.4 and its 304 compute units as multiprocessors
    "id": 0,
    "name": "AMD Instinct MI300X",
    "totalGlobalMem": 206141652992,
    "computeMajor": 9,
    "computeMinor": 4,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 64,
    "sharedMemPerBlock": 65536,
    "numSms": 304,
    "maxSharedMemoryPerMultiProcessor": 65536,
}


def rocm_trace() -> dict[str, Any]:
    """One profiler step on an MI300X: ops launch their kernels through ``hip*`` runtime calls
    (Kineto's ``cuda_runtime`` category on ROCm too), and a host-to-device ``hipMemcpyAsync`` whose
    copy roctracer names by hipMemcpyKind's number and the two pointers."""
    pid, tid, stream = ROCM_PID, ROCM_TID, ROCM_STREAM
    events: list[Event] = [
        _meta("process_name", pid, 0, name="python3"),
        _meta("thread_name", pid, tid, name=f"thread {tid} (python3)"),
        _meta("process_name", 0, 0, name="python3"),
        _meta("process_labels", 0, 0, labels="GPU 0"),
        _meta("thread_name", 0, stream, name=f"stream {stream}"),
    ]
    bf16 = "c10::BFloat16"
    ops = [
        (
            "aten::addmm",
            [[4096], [4096, 4096], [4096, 4096]],
            [bf16] * 3,
            "addmm",
            "hipExtModuleLaunchKernel",
            180.0,
        ),
        (
            "aten::mm",
            [[4096, 4096], [4096, 4096]],
            ["c10::Half"] * 2,
            "mm",
            "hipExtModuleLaunchKernel",
            190.0,
        ),
        ("aten::native_batch_norm", [[32, 256, 56, 56]], [bf16], "batch_norm", "hipLaunchKernel", 40.0),
        (
            "aten::_flash_attention_forward",
            [[8, 2048, 16, 128]] * 3,
            [bf16] * 3,
            "attention",
            "hipLaunchKernel",
            650.0,
        ),
        ("triton_poi_fused_mul_silu_0", [], [], "triton", "hipModuleLaunchKernel", 12.0),
    ]
    step = _x("user_annotation", "ProfilerStep#1", pid, tid, 1000.0, 4200.0)
    body: list[Event] = [step]
    t, correlation, external = 1010.0, 700, 1
    for name, dims, types, kernel, runtime, dur in ops:
        cat = "user_annotation" if name.startswith("triton_") else "cpu_op"  # Inductor's launch: no op
        ids = {"External id": external} if cat == "cpu_op" else {}
        body.append(
            _x(
                cat,
                name,
                pid,
                tid,
                t,
                60.0,
                **{"External id": external, "Input Dims": dims, "Input type": types},
            )
        )
        call = _x(
            "cuda_runtime",
            runtime,
            pid,
            tid,
            t + 20.0,
            8.0,
            correlation=correlation,
            **ids,
        )
        work = _x(
            "kernel",
            ROCM_KERNELS[kernel],
            0,
            stream,
            t + 200.0,
            dur,
            device=0,
            stream=stream,
            correlation=correlation,
            grid=[1216, 1, 1],
            block=[256, 1, 1],
            **ids,
        )
        body += [call, work, *_flow(correlation, call, work)]
        t, correlation, external = t + 200.0 + dur + 50.0, correlation + 1, external + 1
    # a 64 MiB host-to-device copy (hipMemcpyKind 1) at 52 GB/s
    body.append(_x("cpu_op", "aten::copy_", pid, tid, t, 1400.0, **{"External id": external}))
    call = _x(
        "cuda_runtime",
        "hipMemcpyAsync",
        pid,
        tid,
        t + 10.0,
        9.0,
        correlation=correlation,
        **{"External id": external},
    )
    copy = _x(
        "gpu_memcpy",
        "Memcpy 1 (0x7f2a40000000 -> 0x7f1c00200000)",
        0,
        stream,
        t + 20.0,
        1290.555,
        device=0,
        stream=stream,
        correlation=correlation,
        bytes=67108864,
        **{"memory bandwidth (GB/s)": 52.0, "External id": external},
    )
    body += [call, copy, *_flow(correlation, call, copy)]
    events += body
    return _document(events, devices=[MI300X])


def encode(document: dict[str, Any]) -> bytes:
    """The gzipped JSON bytes of a fixture (deterministic: no timestamp in the gzip header)."""
    return gzip.compress(json.dumps(document, indent=None).encode(), mtime=0)


def write_all() -> None:
    MTIA.write_bytes(encode(mtia_trace()))
    CUDNN_CONV.write_bytes(encode(cudnn_conv_trace()))
    ROCM.write_bytes(encode(rocm_trace()))


if __name__ == "__main__":
    write_all()

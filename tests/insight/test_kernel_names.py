"""Kernel-name decoder: a table of real names from the H200 traces, synthetic names, and fuzzing.

The real names are copied (names only) from the traces in ``../shared/traces/`` (torch 2.11, CUDA 13,
one H200); the comment above each says which trace holds it. Expected fields were checked by hand.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import unicodedata
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tracetui.insight.kernel_names import (
    FAMILIES,
    HEAD_RULES,
    KINDS,
    RULES,
    KernelName,
    decode_kernel_name,
    kernel_name_columns,
    split_inductor_ops,
)
from tracetui.insight.kernel_names.rules import decode_strict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

REAL_CASES: list[tuple[str, dict[str, object]]] = [
    # transformer_train_long
    (
        "Memcpy DtoD (Device -> Device)",
        {
            "family": "memcpy",
            "kind": "copy",
            "op": "DtoD",
            "short": "memcpy DtoD (Device → Device)",
            "variant": "Device -> Device",
        },
    ),
    # mlp_train_eager_default
    (
        "Memcpy DtoH (Device -> Pinned)",
        {
            "family": "memcpy",
            "kind": "copy",
            "op": "DtoH",
            "short": "memcpy DtoH (Device → Pinned)",
            "variant": "Device -> Pinned",
        },
    ),
    # mlp_train_eager_default
    (
        "Memcpy HtoD (Pageable -> Device)",
        {
            "family": "memcpy",
            "kind": "copy",
            "op": "HtoD",
            "short": "memcpy HtoD (Pageable → Device)",
            "variant": "Pageable -> Device",
        },
    ),
    # cuda_graph_replay
    (
        "Memset (Device)",
        {"family": "memset", "kind": "fill", "op": "memset", "short": "memset (Device)", "variant": "Device"},
    ),
    # transformer_train_long
    (
        "at::cuda::philox::unpack_cudnn(at::PhiloxCudaState, long*, long*)",
        {"family": "aten", "kind": "rng", "op": "philox seed unpack", "short": "rng philox seed unpack"},
    ),
    # transformer_train_long
    (
        (
            "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_c"
            "ga1x1x1_kernel0_0"
        ),
        {
            "family": "cudnn",
            "kind": "attention",
            "op": "attention backward",
            "short": "cudnn sdpa flash bprop 64x64x64",
            "arch": "sm90",
            "tile": "64x64x64",
            "cluster": "1x1x1",
            "dtype": "fp16",
            "mma": "wgmma",
            "kernel_id": 26,
        },
    ),
    # transformer_train_long
    (
        (
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_c"
            "ga1x1x1_kernel0_0"
        ),
        {
            "family": "cudnn",
            "kind": "attention",
            "op": "attention forward",
            "short": "cudnn sdpa flash fprop 64x128x64",
            "arch": "sm90",
            "tile": "64x128x64",
            "cluster": "1x1x1",
            "dtype": "fp16",
            "mma": "wgmma",
            "kernel_id": 7,
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 128x128 NNT",
            "arch": "sm90",
            "tile": "128x128",
            "stages": "64x6",
            "layout": "NNT",
            "cluster": "2x1",
            "dtype": "bf16",
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_bias_TNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm+bias",
            "short": "nvjet gemm+bias bf16 128x128 TNT",
            "arch": "sm90",
            "tile": "128x128",
            "stages": "64x6",
            "layout": "TNT",
            "cluster": "2x1",
            "dtype": "bf16",
            "variant": "bias epilogue",
            "fused_ops": ("bias",),
        },
    ),
    # mlp_compiled
    (
        "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 192x128 coopB TNT",
            "arch": "sm90",
            "tile": "192x128",
            "stages": "64x5",
            "layout": "TNT",
            "cluster": "1x2",
            "dtype": "bf16",
            "variant": "coopB",
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 256x128 coopA NNT",
            "arch": "sm90",
            "tile": "256x128",
            "stages": "64x4",
            "layout": "NNT",
            "cluster": "1x2",
            "dtype": "bf16",
            "variant": "coopA",
        },
    ),
    # mlp_compiled
    (
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 256x128 coopA TNT",
            "arch": "sm90",
            "tile": "256x128",
            "stages": "64x4",
            "layout": "TNT",
            "cluster": "1x2",
            "dtype": "bf16",
            "variant": "coopA",
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm+bias",
            "short": "nvjet gemm+bias bf16 256x128 coopA TNT",
            "arch": "sm90",
            "tile": "256x128",
            "stages": "64x4",
            "layout": "TNT",
            "cluster": "1x2",
            "dtype": "bf16",
            "variant": "coopA, bias epilogue",
            "fused_ops": ("bias",),
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_32x64_64x16_2x1_v_bz_NTN",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 32x64 NTN",
            "arch": "sm90",
            "tile": "32x64",
            "stages": "64x16",
            "layout": "NTN",
            "cluster": "2x1",
            "dtype": "bf16",
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NTN",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 64x128 NTN",
            "arch": "sm90",
            "tile": "64x128",
            "stages": "64x8",
            "layout": "NTN",
            "cluster": "2x1",
            "dtype": "bf16",
        },
    ),
    # transformer_train_long
    (
        "nvjet_sm90_tst_64x128_64x8_4x2_h_bz_NTN",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm",
            "short": "nvjet gemm bf16 64x128 NTN",
            "arch": "sm90",
            "tile": "64x128",
            "stages": "64x8",
            "layout": "NTN",
            "cluster": "4x2",
            "dtype": "bf16",
        },
    ),
    # linear_compiled
    (
        "nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT",
        {
            "family": "cublasLt nvjet",
            "kind": "gemm",
            "op": "gemm+bias",
            "short": "nvjet gemm+bias bf16 64x8 TNT",
            "arch": "sm90",
            "tile": "64x8",
            "stages": "64x16",
            "layout": "TNT",
            "cluster": "1x2",
            "dtype": "bf16",
            "variant": "bias epilogue",
            "fused_ops": ("bias",),
        },
    ),
    # mlp_train_eager_default
    (
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_alig"
            "na4_alignc4_execute_kernel__5x_cublas"
        ),
        {
            "family": "cublas",
            "kind": "gemm",
            "op": "gemm",
            "short": "cublas gemm fp32 64x64 nnn",
            "arch": "sm80",
            "tile": "64x64",
            "stages": "3",
            "layout": "nnn",
            "dtype": "fp32",
            "mma": "ffma",
            "alignment": "a4 c4",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_alig"
            "na4_alignc4_execute_split_k_kernel__5x_cublas"
        ),
        {
            "family": "cublas",
            "kind": "gemm",
            "op": "gemm",
            "short": "cublas gemm fp32 64x64 nnn split-K",
            "arch": "sm80",
            "tile": "64x64",
            "stages": "3",
            "layout": "nnn",
            "dtype": "fp32",
            "mma": "ffma",
            "alignment": "a4 c4",
            "variant": "split-K",
        },
    ),
    # mlp_train_compiled
    (
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_alig"
            "na4_alignc4_execute_kernel__5x_cublas"
        ),
        {
            "family": "cublas",
            "kind": "gemm",
            "op": "gemm",
            "short": "cublas gemm fp32 32x32 ntn",
            "arch": "sm80",
            "tile": "32x32",
            "stages": "3",
            "layout": "ntn",
            "dtype": "fp32",
            "mma": "ffma",
            "alignment": "a4 c4",
        },
    ),
    # mlp_train_compiled
    (
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_alig"
            "na4_alignc4_execute_kernel__5x_cublas"
        ),
        {
            "family": "cublas",
            "kind": "gemm",
            "op": "gemm",
            "short": "cublas gemm fp32 32x32 tnn",
            "arch": "sm80",
            "tile": "32x32",
            "stages": "3",
            "layout": "tnn",
            "dtype": "fp32",
            "mma": "ffma",
            "alignment": "a4 c4",
        },
    ),
    # mlp_train_compiled
    (
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_alig"
            "na4_alignc4_execute_split_k_kernel__5x_cublas"
        ),
        {
            "family": "cublas",
            "kind": "gemm",
            "op": "gemm",
            "short": "cublas gemm fp32 32x32 tnn split-K",
            "arch": "sm80",
            "tile": "32x32",
            "stages": "3",
            "layout": "tnn",
            "dtype": "fp32",
            "mma": "ffma",
            "alignment": "a4 c4",
            "variant": "split-K",
        },
    ),
    # mlp_train_compiled
    (
        "triton_per_fused_sum_0",
        {
            "family": "inductor",
            "kind": "persistent-reduction",
            "op": "sum",
            "short": "inductor per sum #0",
            "fused_ops": ("sum",),
            "kernel_id": 0,
        },
    ),
    # mlp_train_compiled
    (
        "triton_per_fused_sum_threshold_backward_1",
        {
            "family": "inductor",
            "kind": "persistent-reduction",
            "op": "sum+threshold_backward",
            "short": "inductor per sum+threshold_backward #1",
            "fused_ops": ("sum", "threshold_backward"),
            "kernel_id": 1,
        },
    ),
    # mlp_compiled
    (
        "triton_poi_fused__unsafe_view_gelu_mul_0",
        {
            "family": "inductor",
            "kind": "pointwise",
            "op": "_unsafe_view+gelu+mul",
            "short": "inductor poi _unsafe_view+gelu+mul #0",
            "fused_ops": ("_unsafe_view", "gelu", "mul"),
            "kernel_id": 0,
        },
    ),
    # mlp_train_compiled
    (
        "triton_poi_fused_addmm_relu_0",
        {
            "family": "inductor",
            "kind": "pointwise",
            "op": "addmm+relu",
            "short": "inductor poi addmm+relu #0",
            "fused_ops": ("addmm", "relu"),
            "kernel_id": 0,
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void (anonymous namespace)::softmax_warp_backward<float, float, float, 4, true, "
            "false>(float*, float const*, float const*, int, int, int, bool const*)"
        ),
        {
            "family": "aten",
            "kind": "softmax",
            "op": "log_softmax backward",
            "short": "log_softmax bwd",
            "dtype": "fp32",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 4, true, "
            "false>(float*, float const*, int, int, int, bool const*, int, bool)"
        ),
        {
            "family": "aten",
            "kind": "softmax",
            "op": "log_softmax forward",
            "short": "log_softmax fwd",
            "dtype": "fp32",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, "
            "float, 32u, 32u, 256u, false, true, false>(long, long, float const*, float const*, "
            "float const*, float const*, float*, float*)"
        ),
        {
            "family": "aten",
            "kind": "norm",
            "op": "layer_norm backward (gamma, beta)",
            "short": "layer_norm bwd (gamma, beta)",
            "dtype": "fp32",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<"
            "float, 4, at::native::templates::cuda::normal_and_transform<float, float, "
            "at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerator"
            "Impl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2}, at::native::(anonymous namespace)::distribution_nullary_kernel<float"
            ", float, float4, at::CUDAGeneratorImpl*, "
            "at::native::templates::cuda::normal_and_transform<float, float, "
            "at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerator"
            "Impl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2}, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(a"
            "t::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operato"
            "r()() const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIterator"
            "Base&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<flo"
            "at, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CU"
            "DAGeneratorImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2} const&, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorI"
            "mpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(int, "
            "float)#1}>(long, at::PhiloxCudaState, at::native::templates::cuda::normal_and_transf"
            "orm<float, float, at::CUDAGeneratorImpl*, "
            "at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase "
            "const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2}, at::native::(anonymous namespace)::distribution_nullary_kernel<float"
            ", float, float4, at::CUDAGeneratorImpl*, "
            "at::native::templates::cuda::normal_and_transform<float, float, "
            "at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerator"
            "Impl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2}, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(a"
            "t::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operato"
            "r()() const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIterator"
            "Base&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<flo"
            "at, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CU"
            "DAGeneratorImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGenerato"
            "rImpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhil"
            "ox4_32_10*)#2} const&, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorI"
            "mpl*>(at::TensorBase const&, double, double, "
            "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
            "const::{lambda()#2}::operator()() const::{lambda(float)#1})::{lambda(int, float)#1})"
        ),
        {"family": "aten", "kind": "rng", "op": "normal", "short": "rng normal", "dtype": "fp32"},
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, "
            "float, unsigned int, 1, 8, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, "
            "unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
            "at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, "
            "at::PhiloxCudaState)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "dropout",
            "short": "dropout ×8",
            "dtype": "bf16",
            "vector_width": 8,
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<floa"
            "t, float, false>(float const*, float const*, float const*, float const*, float "
            "const*, float*, int)"
        ),
        {
            "family": "aten",
            "kind": "norm",
            "op": "layer_norm backward (input)",
            "short": "layer_norm bwd (input)",
            "dtype": "fp32",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<1>, at::native::(anonymous "
            "namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, "
            "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
            "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
            "std::multiplies<float>, float)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "mul",
            "short": "foreach mul (scalar)",
            "dtype": "fp32",
            "variant": "scalar",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<1>, at::native::(anonymous "
            "namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, "
            "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
            "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
            "std::plus<float>, float)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "add",
            "short": "foreach add (scalar)",
            "dtype": "fp32",
            "variant": "scalar",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<2>, at::native::(anonymous "
            "namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, "
            "float>(at::native::(anonymous namespace)::TensorListMetadata<2>, "
            "at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
            "std::plus<float>, float)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "add",
            "short": "foreach add (list, alpha)",
            "dtype": "fp32",
            "variant": "list, alpha",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<2>, at::native::(anonymous "
            "namespace)::TernaryOpScalarFunctor<float, 2, 2, 0>, at::native::LerpFunctor<float>, "
            "float>(at::native::(anonymous namespace)::TensorListMetadata<2>, "
            "at::native::(anonymous namespace)::TernaryOpScalarFunctor<float, 2, 2, 0>, "
            "at::native::LerpFunctor<float>, float)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "lerp",
            "short": "foreach lerp (ternary, scalar)",
            "dtype": "fp32",
            "variant": "ternary, scalar",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<2>, at::native::(anonymous "
            "namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float> "
            ">(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous "
            "namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float>)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "sqrt",
            "short": "foreach sqrt (unary)",
            "dtype": "fp32",
            "variant": "unary",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListMetadata<3>, at::native::(anonymous "
            "namespace)::PointwiseOpScalarFunctor<float, 3, 3, 0>, std::multiplies<float>, "
            "float>(at::native::(anonymous namespace)::TensorListMetadata<3>, "
            "at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, 3, 0>, "
            "std::multiplies<float>, float)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "mul",
            "short": "foreach mul (pointwise, scalar)",
            "dtype": "fp32",
            "variant": "pointwise, scalar",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListScalarListMetadata<float, 1>, at::native::(anonymous "
            "namespace)::BinaryOpScalarListFunctor<float, 1, 1, 0>, std::divides<float> "
            ">(at::native::(anonymous namespace)::TensorListScalarListMetadata<float, 1>, "
            "at::native::(anonymous namespace)::BinaryOpScalarListFunctor<float, 1, 1, 0>, "
            "std::divides<float>)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "div",
            "short": "foreach div (scalar list)",
            "dtype": "fp32",
            "variant": "scalar list",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anony"
            "mous namespace)::TensorListScalarListMetadata<float, 3>, at::native::(anonymous "
            "namespace)::PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float> "
            ">(at::native::(anonymous namespace)::TensorListScalarListMetadata<float, 3>, "
            "at::native::(anonymous namespace)::PointwiseOpScalarListFunctor<float, 3, 3, 0>, "
            "std::divides<float>)"
        ),
        {
            "family": "aten",
            "kind": "foreach",
            "op": "div",
            "short": "foreach div (pointwise, scalar list)",
            "dtype": "fp32",
            "variant": "pointwise, scalar list",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<floa"
            "t, long>(float*, float const*, long const*, float const*, float const*, bool, int, "
            "int, long, long)"
        ),
        {
            "family": "aten",
            "kind": "loss",
            "op": "nll_loss backward",
            "short": "nll_loss bwd",
            "dtype": "fp32",
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float"
            ", float, long>(float*, float*, float const*, long const*, float const*, bool, long, "
            "long, long, long)"
        ),
        {
            "family": "aten",
            "kind": "loss",
            "op": "nll_loss forward",
            "short": "nll_loss fwd",
            "dtype": "fp32",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, "
            "false>(int, float, float const*, float const*, float const*, float*, float*, float*)"
        ),
        {
            "family": "aten",
            "kind": "norm",
            "op": "layer_norm forward",
            "short": "layer_norm fwd",
            "dtype": "fp32",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 2, "
            "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
            "at::native::BUnaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
            "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
            "at::native::BUnaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "mul",
            "short": "elementwise mul (strided)",
            "dtype": "fp32",
            "variant": "strided, scalar b",  # BUnaryFunctor: b is a scalar
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 2, "
            "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> "
            ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFu"
            "nctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
            "const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add (strided)",
            "dtype": "fp32",
            "variant": "strided",
        },
    ),
    # mlp_train_compiled
    (
        (
            "void at::native::elementwise_kernel<128, 2, "
            "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIte"
            "ratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
            "const::{lambda(float)#1}>(at::TensorIteratorBase&, "
            "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator"
            "()() const::{lambda()#7}::operator()() const::{lambda(float)#1} "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct"
            "_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
            "const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&,"
            " at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operato"
            "r()() const::{lambda()#7}::operator()() const::{lambda(float)#1} "
            "const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "copy",
            "op": "copy",
            "short": "copy (strided)",
            "dtype": "fp32",
            "variant": "strided",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 4, "
            "at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> "
            ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::CUDAFunctor_a"
            "dd<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
            "const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add (strided)",
            "dtype": "fp32",
            "variant": "strided",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 4, "
            "at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
            "namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor "
            "const&, at::Tensor const&, float)::{lambda(c10::BFloat16, "
            "bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous "
            "namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor "
            "const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1} "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::(anony"
            "mous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, "
            "at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, "
            "bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous "
            "namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor "
            "const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1} "
            "const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "dropout",
            "short": "elementwise dropout (strided)",
            "dtype": "bf16",
            "variant": "strided",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 4, "
            "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> "
            ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFu"
            "nctor_add<c10::BFloat16> >(at::TensorIteratorBase&, "
            "at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add (strided)",
            "dtype": "bf16",
            "variant": "strided",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::elementwise_kernel<128, 4, "
            "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIte"
            "ratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() "
            "const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
            "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator"
            "()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} "
            "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct"
            "_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
            "const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorItera"
            "torBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}"
            "::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} "
            "const&)::{lambda(int)#1})"
        ),
        {
            "family": "aten",
            "kind": "copy",
            "op": "copy",
            "short": "copy (strided)",
            "dtype": "bf16",
            "variant": "strided",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
            "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, "
            "float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
            "unsigned int, c10::BFloat16, 4, 8> >(at::native::ReduceOp<c10::BFloat16, "
            "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, "
            "float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
            "unsigned int, c10::BFloat16, 4, 8>)"
        ),
        {"family": "aten", "kind": "reduction", "op": "sum", "short": "reduce sum", "dtype": "bf16"},
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, "
            "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
            "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
            "float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lamb"
            "da(float, float)#1}>, unsigned int, float, 4, 4>)"
        ),
        {"family": "aten", "kind": "reduction", "op": "sum", "short": "reduce sum", "dtype": "fp32"},
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::reduce_kernel<256, 2, at::native::ReduceOp<float, "
            "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
            "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
            "float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lamb"
            "da(float, float)#1}>, unsigned int, float, 4, 4>)"
        ),
        {"family": "aten", "kind": "reduction", "op": "sum", "short": "reduce sum", "dtype": "fp32"},
    ),
    # transformer_train_long
    (
        (
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
            "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> "
            ">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
            "unsigned int, float, 4, 4>)"
        ),
        {"family": "aten", "kind": "reduction", "op": "mean", "short": "reduce mean", "dtype": "fp32"},
    ),
    # mlp_train_compiled
    (
        (
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
            "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
            "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
            "float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lamb"
            "da(float, float)#1}>, unsigned int, float, 4, 4>)"
        ),
        {"family": "aten", "kind": "reduction", "op": "sum", "short": "reduce sum", "dtype": "fp32"},
    ),
    # transformer_train_long
    (
        (
            "void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, "
            "std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, "
            "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, "
            "at::native::memory::StoreWithCast<1> >(int, at::native::CUDAFunctor_add<float>, "
            "std::array<char*, 3ul>, TrivialOffsetCalculator<2, unsigned int>, "
            "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, "
            "at::native::memory::StoreWithCast<1>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add (unrolled)",
            "dtype": "fp32",
            "variant": "unrolled",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at:"
            ":TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
            "const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, "
            "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
            "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
            "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator"
            "()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, "
            "2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned "
            "int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"
        ),
        {
            "family": "aten",
            "kind": "copy",
            "op": "copy",
            "short": "copy (unrolled)",
            "dtype": "fp32",
            "variant": "unrolled",
        },
    ),
    # cuda_graph_replay
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
            "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
            "at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
            "const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> "
            ">(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase"
            "&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operato"
            "r()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, "
            "2ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "clamp",
            "short": "elementwise clamp ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
            "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
            "float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous "
            "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
            "float)::{lambda(float)#1}, std::array<char*, 2ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "pow",
            "short": "elementwise pow ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
            "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
            "2ul> >(int, at::native::AUnaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "mul",
            "short": "elementwise mul ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized, scalar a",  # AUnaryFunctor: a is a scalar
        },
    ),
    # mlp_train_eager_default
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
            "float, float, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::Te"
            "nsorIteratorBase&, float, float)::{lambda(float, float)#1}>, std::array<char*, 3ul> "
            ">(int, at::native::BinaryFunctor<float, float, float, at::native::(anonymous "
            "namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, "
            "float)::{lambda(float, float)#1}>, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "threshold",
            "short": "elementwise threshold ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
            "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
            "3ul> >(int, at::native::BinaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "mul",
            "short": "elementwise mul ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # mlp_train_compiled
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, "
            "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, "
            "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # mlp_train_compiled
    (
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, "
            "1ul>)"
        ),
        {
            "family": "aten",
            "kind": "fill",
            "op": "fill",
            "short": "fill ×4",
            "dtype": "fp32",
            "vector_width": 4,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
            "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
            "at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
            "const::{lambda()#9}::operator()() const::{lambda(c10::BFloat16)#1}, "
            "std::array<char*, 2ul> >(int, at::native::(anonymous "
            "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
            "at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
            "const::{lambda()#9}::operator()() const::{lambda(c10::BFloat16)#1}, "
            "std::array<char*, 2ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "clamp",
            "short": "elementwise clamp ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
            "namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor "
            "const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, "
            "std::array<char*, 3ul> >(int, at::native::(anonymous "
            "namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor "
            "const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, "
            "std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "dropout",
            "short": "elementwise dropout ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::TensorIt"
            "eratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, "
            "c10::BFloat16)#1}>, std::array<char*, 3ul> >(int, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::TensorIt"
            "eratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, "
            "c10::BFloat16)#1}>, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "threshold",
            "short": "elementwise threshold ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # mlp_eager
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "mul",
            "short": "elementwise mul ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, "
            "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "add",
            "short": "elementwise add ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, "
            "at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)"
        ),
        {
            "family": "aten",
            "kind": "fill",
            "op": "fill",
            "short": "fill ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # mlp_eager
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
            "at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() "
            "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
            "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
            "at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() "
            "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"
        ),
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "gelu",
            "short": "elementwise gelu ×8",
            "dtype": "bf16",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # transformer_train_long
    (
        (
            "void at::native::vectorized_elementwise_kernel<8, "
            "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
            "std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIterat"
            "orBase&)::{lambda(float)#1}, std::array<char*, 2ul>)"
        ),
        {
            "family": "aten",
            "kind": "copy",
            "op": "copy",
            "short": "copy ×8",
            "dtype": "fp32",
            "vector_width": 8,
            "variant": "vectorized",
        },
    ),
    # cuda_graph_replay
    (
        (
            "void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, "
            "1>(int, int, long, float*, cublasLtEpilogue_t, int, float*, long, void*, long, "
            "long, long, float*, long, int*)"
        ),
        {
            "family": "cublasLt",
            "kind": "epilogue",
            "op": "epilogue",
            "short": "cublasLt epilogue",
            "dtype": "fp32",
        },
    ),
    # mlp_train_compiled
    (
        (
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
            "float, float, float, true, false, false, "
            "false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, "
            "float*, float const*, float const*, float const*, float const*, float*, void*, "
            "long, float*, int*, float*, float*, float const*, float const*, float const*, float "
            "const*, float const*)"
        ),
        {
            "family": "cublasLt",
            "kind": "reduction",
            "op": "split-K reduce",
            "short": "cublasLt split-K reduce",
            "dtype": "fp32",
            "variant": "split-K",
        },
    ),
    # cuda_graph_replay
    (
        (
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
            "float, float, float, true, true, false, false>(cublasLt::cublasSplitKParams<float>, "
            "float const*, float const*, float*, float*, float const*, float const*, float "
            "const*, float const*, float*, void*, long, float*, int*, float*, float*, float "
            "const*, float const*, float const*, float const*, float const*)"
        ),
        {
            "family": "cublasLt",
            "kind": "reduction",
            "op": "split-K reduce",
            "short": "cublasLt split-K reduce",
            "dtype": "fp32",
            "variant": "split-K",
        },
    ),
    # transformer_train_long
    (
        (
            "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void "
            "const*, void*, void*, unsigned int, unsigned int, unsigned int, unsigned int, "
            "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
            "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
            "unsigned int, float, void const*, void const*, void const*, void const*, void "
            "const*, bool, void const*, void*, void const*, int, int, int, int, int, int, int, "
            "int, int)"
        ),
        {
            "family": "cudnn",
            "kind": "attention",
            "op": "attention backward dot(dO, O)",
            "short": "cudnn compute_dot_do_o_specialized<…>",
        },
    ),
    # transformer_train_long
    (
        (
            "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int, "
            "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
            "unsigned int, unsigned int, unsigned int, float const*, float const*, float const*, "
            "float*, void const*, void*, void*, bool, bool)"
        ),
        {
            "family": "cudnn",
            "kind": "attention",
            "op": "attention backward dQ convert",
            "short": "cudnn convert_dq_to_16bits<…>",
        },
    ),
    # mlp_train_compiled
    (
        (
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(cutlass_80_simt_sge"
            "mm_64x64_8x5_nn_align1::Params)"
        ),
        {
            "family": "cutlass",
            "kind": "gemm",
            "op": "gemm",
            "short": "cutlass simt gemm fp32 64x64 nn",
            "arch": "sm80",
            "tile": "64x64",
            "stages": "8x5",
            "layout": "nn",
            "dtype": "fp32",
            "mma": "simt",
            "alignment": "1",
        },
    ),
    # cuda_graph_replay
    (
        (
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sge"
            "mm_64x64_8x5_tn_align1::Params)"
        ),
        {
            "family": "cutlass",
            "kind": "gemm",
            "op": "gemm",
            "short": "cutlass simt gemm fp32 64x64 tn",
            "arch": "sm80",
            "tile": "64x64",
            "stages": "8x5",
            "layout": "tn",
            "dtype": "fp32",
            "mma": "simt",
            "alignment": "1",
        },
    ),
    # cuda_graph_replay
    (
        (
            "void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>, "
            "float const*, float*, float const*)"
        ),
        {"family": "cublas", "kind": "blas", "op": "scal", "short": "cublas scal", "dtype": "fp32"},
    ),
    # cuda_graph_replay
    (
        (
            "void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*, float "
            "const*, int, int, int, int, int, int, float const*, float const*, float, float, "
            "int, int, int*, int*)"
        ),
        {"family": "cublas", "kind": "gemm", "op": "gemm", "short": "cublas sgemm large-K", "dtype": "fp32"},
    ),
    # capture_mlp_triton_compiled (this project's hand-written Triton kernel)
    (
        "_geglu_fwd_kernel",
        {"family": "triton", "kind": "elementwise", "op": "geglu_fwd", "short": "triton _geglu_fwd_kernel"},
    ),
]


@pytest.mark.parametrize(
    ("name", "expected"), REAL_CASES, ids=lambda v: str(v)[:48] if isinstance(v, str) else ""
)
def test_real_names(name: str, expected: dict[str, object]) -> None:
    decoded = decode_kernel_name(name)
    got = {field: getattr(decoded, field) for field in expected}
    assert got == expected
    assert decoded.name == name


@functools.cache
def fixture_gpu_names(real: bool = False) -> frozenset[str]:
    """Every GPU kernel, memcpy and memset name in the traces of ``tests/fixtures`` (``real``: not
    the ``synthetic_*`` ones, built for what no real trace here has)."""
    names = set()
    for path in FIXTURES.glob("*.json.gz"):
        if real and path.name.startswith("synthetic_"):
            continue
        doc = json.loads(gzip.decompress(path.read_bytes()))
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        names |= {e["name"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    return frozenset(names)


def test_every_gpu_name_in_the_fixtures_decodes_to_a_known_family() -> None:
    names = fixture_gpu_names()
    assert len(names) >= 50
    for name in names:
        decoded = decode_kernel_name(name)
        assert decoded.family in FAMILIES and decoded.family != "other", name
        assert decoded.kind in KINDS and decoded.short, name


def test_the_real_table_covers_every_family_in_the_fixtures_and_holds_their_names() -> None:
    in_fixtures = {decode_kernel_name(name).family for name in fixture_gpu_names(real=True)}
    in_table = {decode_kernel_name(name).family for name, _ in REAL_CASES}
    assert in_fixtures <= in_table, in_fixtures - in_table
    # The table's names are real: most are copied from traces that are also fixtures here.
    assert len({name for name, _ in REAL_CASES} & fixture_gpu_names()) >= 50


SYNTHETIC_CASES: list[tuple[str, dict[str, object]]] = [
    (
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
        {
            "family": "cublas",
            "kind": "gemm",
            "arch": "sm80",
            "dtype": "bf16",
            "mma": "s16816",
            "tile": "128x128",
            "stages": "32x5",
            "layout": "tn",
            "vector_width": 8,
        },
    ),
    (
        "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn",
        {"family": "cublas", "dtype": "fp16", "tile": "256x128", "stages": "64x3", "layout": "nn"},
    ),
    (
        "volta_h884gemm_64x64_ldg8_nn",
        {"family": "cublas", "arch": "sm70", "dtype": "fp16", "mma": "h884", "tile": "64x64"},
    ),
    (
        "ampere_sgemm_128x64_tn",
        {
            "family": "cublas",
            "kind": "gemm",
            "dtype": "fp32",
            "mma": "simt",
            "tile": "128x64",
            "layout": "tn",
        },
    ),
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas",
        {
            "family": "cublas",
            "kind": "gemm",
            "arch": "sm90",
            "dtype": "bf16",
            "tile": "128x128",
            "mma": "wgmma",
        },
    ),
    (
        "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_tn_align8",
        {
            "family": "cutlass",
            "kind": "gemm",
            "arch": "sm80",
            "dtype": "bf16",
            "mma": "s161616",
            "tile": "32x32",
            "stages": "32x1",
            "layout": "tn",
            "alignment": "8",
            "short": "cutlass wmma gemm bf16 32x32 tn",
        },
    ),
    (
        "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8",
        {"family": "cutlass", "fused_ops": ("relu",), "tile": "64x64", "stages": "64x4"},
    ),
    (
        "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_void_bf16_128x128x64_2x1x1_0_tnt_align8_"
        "warpspecialized_cooperative_epi_tma",
        {"family": "cutlass", "arch": "sm90", "tile": "128x128", "cluster": "2x1x1", "layout": "tnt"},
    ),
    (
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        {
            "family": "nccl",
            "kind": "collective",
            "collective": "AllReduce",
            "reduce_op": "Sum",
            "dtype": "fp32",
            "algorithm": "RING",
            "protocol": "LL",
            "short": "nccl AllReduce Sum fp32 RING/LL",
        },
    ),
    (
        "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclDevComm*, unsigned long, ncclWork*)",
        {
            "collective": "AllReduce",
            "reduce_op": "Sum",
            "dtype": "bf16",
            "algorithm": "RING",
            "protocol": "LL",
        },
    ),
    (
        "ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE",
        {"collective": "ReduceScatter", "algorithm": "COLLNET_DIRECT", "protocol": "SIMPLE"},
    ),
    (
        "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
        {"family": "nccl", "collective": "SendRecv", "reduce_op": None, "algorithm": None},
    ),
    (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
        "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
        {
            "family": "flash-attention",
            "kind": "attention",
            "op": "attention forward",
            "dtype": "bf16",
            "tile": "128x64",
            "short": "flash fwd bf16 hd128",
        },
    ),
    (
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, "
        "128, 8, 2, 4, 2, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, "
        "cutlass::half_t> >, true, false, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
        {"family": "flash-attention", "op": "attention backward", "dtype": "fp16"},
    ),
    (
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
        "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
        {
            "family": "mem-efficient-attention",
            "kind": "attention",
            "op": "attention forward",
            "dtype": "bf16",
            "tile": "64x64",
            "arch": "sm80",
        },
    ),
    (
        "fmha_cutlassB_f16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
        "cutlass::arch::Sm80, cutlass::half_t, true, false, true, 64, 64, 64, false>::Params)",
        {"family": "mem-efficient-attention", "op": "attention backward", "dtype": "fp16"},
    ),
    (
        "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_stage4_"
        "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
        {
            "family": "cudnn",
            "kind": "convolution",
            "op": "conv forward",
            "arch": "sm80",
            "dtype": "bf16",
            "tile": "128x128",
            "stages": "4",
        },
    ),
    (
        "sm90_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
        "g1_execute_segment_k_off_kernel__5x_cudnn",
        {"family": "cudnn", "kind": "convolution", "op": "conv data grad", "arch": "sm90"},
    ),
    (
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, "
        "int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, "
        "float, int, float const*, float const*, bool, int, int)",
        {"family": "cudnn", "kind": "convolution", "dtype": "fp32"},
    ),
    (
        "ampere_scudnn_128x64_relu_interior_nn_v1",
        {"family": "cudnn", "kind": "convolution", "fused_ops": ("relu",), "tile": "128x64"},
    ),
    (
        "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::"
        "WinogradDataParams<float, float>)",
        {"family": "cudnn", "kind": "convolution"},
    ),
    (
        "triton_tem_fused_mm_0",
        {"family": "inductor", "kind": "template", "fused_ops": ("mm",), "kernel_id": 0},
    ),
    (
        "triton_red_fused__log_softmax_0",
        {"family": "inductor", "kind": "reduction", "fused_ops": ("_log_softmax",)},
    ),
    (
        "triton_poi_fused_add_mul_native_layer_norm_12",
        {"kind": "pointwise", "fused_ops": ("add", "mul", "native_layer_norm"), "kernel_id": 12},
    ),
    ("matmul_kernel", {"family": "triton", "kind": "gemm", "fused_ops": ()}),
    # user Triton kernels: the ops their names list are what they fuse (geglu is gelu and mul)
    (
        "_gate_up_gemm_geglu_kernel",
        {
            "family": "triton",
            "kind": "gemm",
            "op": "gate_up_gemm_geglu",
            "fused_ops": ("gemm", "gelu", "mul"),
            "short": "triton _gate_up_gemm_geglu_kernel",
        },
    ),
    ("_geglu_fwd_kernel", {"kind": "elementwise", "fused_ops": ("gelu", "mul")}),
    ("_geglu_bwd_kernel", {"kind": "elementwise", "fused_ops": ("gelu_backward", "mul")}),
    ("swiglu_backward_kernel", {"fused_ops": ("silu_backward", "mul")}),
    ("_matmul_bias_relu", {"kind": "gemm", "fused_ops": ("gemm", "add", "relu")}),
    ("softmax_kernel", {"kind": "softmax", "fused_ops": ()}),
    ("_attn_fwd", {"kind": "attention", "fused_ops": ()}),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel("
        "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
        "{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::silu_kernel("
        "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
        "{lambda(float)#1}, std::array<char*, 2ul>)",
        {
            "family": "aten",
            "kind": "elementwise",
            "op": "silu",
            "vector_width": 4,
            "short": "elementwise silu ×4",
        },
    ),
    (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
        {"family": "aten", "kind": "softmax", "op": "softmax forward"},
    ),
    (
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
        "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, "
        "double, double, bool, float*, float*>(int)",
        {"family": "aten", "kind": "foreach", "op": "fused adam"},
    ),
    (
        "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<"
        "long, long, int>::Policy900, false, long, long, int, int>(int*, int*, long*, long const*, long*, "
        "long const*, int, int, int)",
        {"family": "cub", "kind": "sort"},
    ),
    ("Memcpy PtoP (Device -> Device)", {"family": "memcpy", "op": "PtoP"}),
    (
        "void my_ns::foo<float, 4>(float*, int)",
        {"family": "other", "kind": "other", "short": "my_ns::foo<…>"},
    ),
    ("Kernel", {"family": "other", "short": "Kernel"}),
    # ROCm (issue 37 item 6: Tensile's bare Cijk_ identifiers were read as user Triton kernels)
    (
        "Cijk_Ailk_Bjlk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_CMS_SN_LDSB1_GSU0_ISA950_WG32_8_1",
        {"family": "hipblaslt", "kind": "gemm", "layout": "NT", "arch": "gfx950", "fused_ops": ("bias",)},
    ),
    (
        "Cijk_Alik_Bjlk_SB_MT64x64x16_MI32x32x2x1_GSU4_ISA90a_WG16_16_1",
        {"family": "tensile", "kind": "gemm", "layout": "TT", "dtype": "fp32", "variant": "split-K"},
    ),
    (
        "Cijk_Ailk_Bljk_F8SS_BH_MT64x64x64_MI16x16x32x1_ISA942",
        {"family": "tensile", "dtype": "fp8", "mma": "mfma 16x16x32x1", "short": "tensile gemm fp8 64x64 NN"},
    ),
    (
        "Custom_Cijk_Ailk_Bljk_BBS_BH_Bias_SAV_UserArgs_MT128x128x64_MI16x16x1_UserArgs_shortname1_gfx950",
        {"family": "hipblaslt", "arch": "gfx950", "tile": "128x128"},
    ),
    (
        "void rocblas_gemvt_kernel<false, 256, int, float const*, float, float>(int, int, float, long, "
        "float const*, long, int, long, float const*, long, int, long, float, long, float*, long, int, long)",
        {"family": "rocblas", "kind": "gemv", "short": "rocblas gemvt_kernel"},
    ),
    ("hipblasltAMaxKernel", {"family": "hipblaslt", "kind": "other"}),
    ("MIOpenBatchNormFwdTrainSpatial", {"family": "miopen", "kind": "norm"}),
    ("miopenSp3AsmConv3x3F", {"family": "miopen", "kind": "convolution"}),
    ("naive_conv_ab_nonpacked_fwd_nchw_half_double_half", {"family": "miopen", "kind": "convolution"}),
    ("igemm_fwd_gtcx35_nhwc_fp16_bx0_ex1_bt128x128x32", {"family": "miopen", "kind": "convolution"}),
    ("MIOpenSoftmaxFwd", {"family": "miopen", "kind": "softmax"}),
    (
        "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::"
        "RowMajor>, true, 2>(ck::GridwiseGemm_xdl_cshuffle_v3<>::Argument)",
        {"family": "composable-kernel", "kind": "gemm", "short": "ck kernel_gemm_xdl_cshuffle_v3"},
    ),
    (
        "void ck_tile::kentry<1, ck_tile::GroupedGemmKernel<ck_tile::GemmSpatiallyLocalTilePartitioner<>>>("
        "ck_tile::GroupedGemmHostArgs)",
        {"family": "composable-kernel", "kind": "gemm", "short": "ck_tile GroupedGemmKernel"},
    ),
    (
        "void ck_tile::kentry<1, ck_tile::FmhaBwdDQDKDVKernel<>>(ck_tile::FmhaBwdKargs)",
        {"family": "composable-kernel", "kind": "attention"},
    ),
    ("_rmsnorm_kernel.kd", {"family": "triton", "kind": "norm", "short": "triton _rmsnorm_kernel"}),
    ("triton_red_fused_sum_3.kd", {"family": "inductor", "kind": "reduction", "kernel_id": 3}),
    ("Memcpy 1 (0x7f2a40000000 -> 0x7f1c00200000)", {"family": "memcpy", "op": "HtoD"}),
    ("Memcpy 3 (0x7f2a40000000 -> 0x7f1c00200000)", {"family": "memcpy", "op": "DtoD"}),
    ("Memcpy 4 (0x7f2a40000000 -> 0x7f1c00200000)", {"family": "memcpy", "op": None}),
]


@pytest.mark.parametrize(
    ("name", "expected"), SYNTHETIC_CASES, ids=lambda v: str(v)[:48] if isinstance(v, str) else ""
)
def test_synthetic_names(name: str, expected: dict[str, object]) -> None:
    decoded = decode_kernel_name(name)
    assert {field: getattr(decoded, field) for field in expected} == expected


def _notes(name: str) -> str:
    return "\n".join(decode_kernel_name(name).notes)


def test_notes_explain_the_blog_points() -> None:
    bias = _notes("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT")
    assert "bias add fused into the GEMM epilogue (why nn.Linear shows no aten::add" in bias
    nvjet = _notes("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
    assert "64x4: K tile of 64 × 4 pipeline stages" in nvjet
    assert "cluster 1x2" in nvjet
    assert "coopA: cooperative schedule" in nvjet
    assert "inputs bf16, compute fp32, output bf16" in nvjet
    assert "layout TNT" in nvjet
    inductor = _notes("triton_poi_fused__unsafe_view_gelu_mul_0")
    assert "pointwise fusing _unsafe_view, gelu, mul; kernel #0" in inductor
    assert "double underscore" in inductor
    assert "_unsafe_view only rewrites shape/stride metadata" in inductor
    ffma = _notes(
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
        "execute_kernel__5x_cublas"
    )
    assert "no tensor cores (TF32 is off" in ffma
    assert "pageable host memory" in _notes("Memcpy HtoD (Pageable -> Device)")
    relu = _notes(
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::"
        "ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
        "{lambda(float)#1}, std::array<char*, 2ul> >(int)"
    )
    assert "what aten::relu runs on CUDA" in relu
    nccl = _notes("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    assert "protocol LL (low latency" in nccl


@pytest.mark.parametrize(
    ("fused", "ops"),
    [
        ("_unsafe_view_gelu_mul", ("_unsafe_view", "gelu", "mul")),
        ("sum_threshold_backward", ("sum", "threshold_backward")),
        ("addmm_relu", ("addmm", "relu")),
        ("_to_copy_add_native_layer_norm", ("_to_copy", "add", "native_layer_norm")),
        ("add_mul_", ("add", "mul_")),
        ("mm", ("mm",)),
        ("foo_bar", ("foo", "bar")),  # unknown multi-word ops fall apart into words: tidy enough
        ("", ()),
        ("__", ()),
    ],
)
def test_split_inductor_ops(fused: str, ops: tuple[str, ...]) -> None:
    assert split_inductor_ops(fused) == ops


def test_table_is_well_formed() -> None:
    assert all(rule.family in FAMILIES for rule in [*RULES, *HEAD_RULES])
    for name, _ in REAL_CASES + SYNTHETIC_CASES:
        decoded = decode_kernel_name(name)
        assert decoded.family in FAMILIES
        assert decoded.kind in KINDS


def test_decoding_is_cached_and_returns_frozen_values() -> None:
    name = "triton_poi_fused__unsafe_view_gelu_mul_0"
    first = decode_kernel_name(name)
    assert decode_kernel_name(name) is first
    with pytest.raises(AttributeError):
        first.family = "x"  # type: ignore[misc]
    assert first.as_dict()["fused_ops"] == ("_unsafe_view", "gelu", "mul")


def test_kernel_name_columns_decodes_unique_names_once() -> None:
    names = pl.Series(
        "name",
        [
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
            "triton_poi_fused__unsafe_view_gelu_mul_0",
            None,
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
            "Memset (Device)",
        ],
    )
    frame = kernel_name_columns(names)
    assert frame.height == 3
    assert frame.columns[:9] == [
        "name",
        "family",
        "kind",
        "op",
        "arch",
        "tile",
        "stages",
        "layout",
        "cluster",
    ]
    for column in ("family", "kind", "arch", "tile", "stages", "layout", "fused_ops", "short"):
        assert column in frame.columns
    row = frame.row(1, named=True)
    assert row["family"] == "inductor"
    assert row["fused_ops"] == "_unsafe_view,gelu,mul"
    assert row["kernel_id"] == 0
    gemm = frame.row(0, named=True)
    assert (gemm["tile"], gemm["stages"], gemm["layout"], gemm["fused_ops"]) == ("256x128", "64x4", "TNT", "")
    assert frame.schema["vector_width"] == pl.Int64
    assert frame.schema["notes"] == pl.List(pl.String)
    # join back onto a kernels frame
    kernels = pl.DataFrame({"name": names, "dur": [55.0, 37.4, 1.0, 54.0, 2.0]})
    joined = kernels.join(frame, on="name", how="left")
    assert joined["family"].to_list() == ["cublasLt nvjet", "inductor", None, "cublasLt nvjet", "memset"]


def test_kernel_name_columns_keeps_a_categorical_name_joinable() -> None:
    names = pl.Series("name", ["a_kernel", "Memset (Device)", "a_kernel"], dtype=pl.Categorical)
    frame = kernel_name_columns(names)
    assert frame.schema["name"] == pl.Categorical
    assert frame.height == 2
    empty = kernel_name_columns(pl.Series("name", [], dtype=pl.String))
    assert empty.height == 0
    assert empty.schema["kernel_id"] == pl.Int64


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in text)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text(
            alphabet=st.sampled_from(list("<>()[]{}:_,x0123456789 abcTNsmvoidnvjettriton\x1b\x07\n\u202e"))
        ),
        st.builds(
            lambda prefix, rest: prefix + rest,
            st.sampled_from(
                [
                    "nvjet_sm90_",
                    "triton_poi_fused_",
                    "void at::native::vectorized_elementwise_kernel<",
                    "void at::native::reduce_kernel<",
                    "ncclDevKernel_",
                    "cutlass_80_",
                    "void cutlass::Kernel2<",
                    "sm80_xmma_gemm_",
                    "ampere_",
                    "Memcpy ",
                    "[bold]",
                    "fmha_cutlassF_",
                    "void pytorch_flash::flash_fwd_kernel<",
                    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_",
                ]
            ),
            st.text(),
        ),
    )
)
def test_decoder_never_raises_and_short_is_printable(name: str) -> None:
    decoded = decode_strict(name)  # no safety net: a handler bug fails here
    assert isinstance(decoded, KernelName)
    assert decoded.family in FAMILIES
    assert decoded.kind in KINDS
    assert not _has_control(decoded.short)
    assert len(decoded.short) <= 96
    assert decode_kernel_name(name).short == decoded.short


# ---- names that decode alike, and doubled words (issue 14 item 10) --------------------------------------

BATCH_NORM = [
    "void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, float, int>"
    "(at::GenericPackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>, float, float, "
    "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, int>)",
    "void at::native::batch_norm_transform_input_kernel<float, float, float, true, int>"
    "(at::GenericPackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>, float)",
    "void at::native::batch_norm_backward_reduce_kernel<float, float, float, int>"
    "(at::GenericPackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>)",
    "void at::native::batch_norm_backward_elemt_kernel<float, float, float, int>"
    "(at::GenericPackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>)",
]
SPLIT_K = [  # the transformer trace's two split-K reduces: one template flag differs
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, "
    "true, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float*)",
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, "
    "true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float*)",
]
NVJET = ["nvjet_sm90_tst_64x128_64x8_4x2_h_bz_NTN", "nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NTN"]
ON_SELF = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
    "std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)",
    "void at::native::vectorized_elementwise_kernel<2, at::native::CUDAFunctorOnSelf_add<long>, "
    "std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<long>, std::array<char*, 2ul>)",
]


def test_names_that_decoded_alike_get_their_distinguishing_part() -> None:
    shorts = dict(kernel_name_columns([*BATCH_NORM, *SPLIT_K, *NVJET]).select("name", "short").iter_rows())
    assert [shorts[n] for n in BATCH_NORM] == [
        "batch_norm statistics",
        "batch_norm fwd",
        "batch_norm bwd reduce",
        "batch_norm bwd",
    ]
    assert [shorts[n] for n in SPLIT_K] == [
        "cublasLt split-K reduce [true]",
        "cublasLt split-K reduce [false]",
    ]
    assert [shorts[n] for n in NVJET] == [
        "nvjet gemm bf16 64x128 NTN [4x2]",
        "nvjet gemm bf16 64x128 NTN [2x1]",
    ]
    alone = dict(kernel_name_columns(NVJET[:1]).select("name", "short").iter_rows())
    assert alone[NVJET[0]] == "nvjet gemm bf16 64x128 NTN"  # no collision, no suffix


def test_no_doubled_words() -> None:
    shorts = [decode_kernel_name(n).short for n in ON_SELF]
    assert shorts == ["elementwise add ×4", "elementwise add ×2"]  # was "elementwise elementwise ×4"
    foreach = (
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
        "at::native::(anonymous namespace)::TensorListMetadata<2>, "
        "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 2, 1, 1>, "
        "at::native::(anonymous namespace)::FooFunctor<float> >(int)"
    )
    assert decode_kernel_name(foreach).short == "foreach (scalar)"  # was "foreach foreach (scalar)"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json.gz")), ids=lambda p: p.name[:30])
def test_every_fixtures_short_names_are_distinct_and_undoubled(path: Path) -> None:
    import tracetui

    names = tracetui.load(path).gpu["name"]
    shorts = kernel_name_columns(names)["short"].to_list()
    assert len(set(shorts)) == names.n_unique()
    for short in shorts:
        words = short.split()
        assert all(a != b for a, b in itertools.pairwise(words)), short

"""FLOPs and bytes from Input Dims / Input type, checked by hand.

Shapes and argument strings are copied from the traces in ``../shared/traces/`` (the blog's GeGLU MLP:
x [64, 128, 768] bf16, gate/up weights [3072, 768], down weight [768, 3072]; ``nn.Linear(32, 64)`` at
batch 1024; the 4-layer transformer). Every expected number is worked out in the comment beside it.
"""

from __future__ import annotations

import polars as pl
import pytest

from tracetui.insight.flops import (
    ELEMENTWISE_FLOPS,
    OpCost,
    dtype_name,
    dtype_size,
    op_cost,
    op_cost_columns,
    parse_args,
)

BF16 = '"c10::BFloat16"'


def cost(name: str, dims: str, types: str, concrete: str | None = None) -> OpCost:
    result = op_cost(name, dims, types, concrete)
    assert result is not None, name
    return result


# --- the blog's MLP (mlp_eager / mlp_compiled) -------------------------------------------------

GEMM_FLOPS = 2 * 8192 * 768 * 3072  # M = 64·128 tokens, K = 768, N = 3072
X_BYTES = 64 * 128 * 768 * 2  # 12,582,912
W_BYTES = 3072 * 768 * 2  # 4,718,592
H_BYTES = 64 * 128 * 3072 * 2  # 50,331,648: one [64, 128, 3072] bf16 activation


def test_blog_gemms_are_38_7_gflop_each() -> None:
    assert GEMM_FLOPS == 38_654_705_664
    gate = cost("aten::linear", "[[64, 128, 768], [3072, 768], []]", f'[{BF16}, {BF16}, ""]')
    down = cost("aten::linear", "[[64, 128, 3072], [768, 3072], []]", f'[{BF16}, {BF16}, ""]')
    mm_up = cost("aten::mm", "[[8192, 768], [768, 3072]]", f"[{BF16}, {BF16}]")
    mm_down = cost("aten::mm", "[[8192, 3072], [3072, 768]]", f"[{BF16}, {BF16}]")
    matmul = cost("aten::matmul", "[[64, 128, 768], [768, 3072]]", f"[{BF16}, {BF16}]")
    for c in (gate, down, mm_up, mm_down, matmul):
        assert c.flops == GEMM_FLOPS
        assert round(c.flops / 1e9, 1) == 38.7  # "38.7 GFLOP each, as the blog says"
        assert c.kind == "gemm"
        assert c.dtype == "bf16"
    assert (gate.bytes_read, gate.bytes_written) == (X_BYTES + W_BYTES, H_BYTES)
    assert (mm_up.bytes_read, mm_up.bytes_written) == (17_301_504, 50_331_648)
    # down: reads the [8192, 3072] activation and the weight, writes [8192, 768]
    assert (mm_down.bytes_read, mm_down.bytes_written) == (H_BYTES + W_BYTES, X_BYTES)
    assert mm_up.intensity == pytest.approx(GEMM_FLOPS / (17_301_504 + 50_331_648))


def test_compiled_mm_with_an_out_argument() -> None:
    # mlp_compiled records the extern kernel's output buffer as a third argument
    c = cost(
        "aten::mm", "[[8192, 768], [768, 3072], [8192, 3072]]", f"[{BF16}, {BF16}, {BF16}]", '["", "", ""]'
    )
    assert (c.flops, c.bytes_read, c.bytes_written) == (GEMM_FLOPS, 17_301_504, 50_331_648)


def test_blog_elementwise_ops_move_151_mb() -> None:
    n = 64 * 128 * 3072  # 25,165,824 elements
    gelu = cost("aten::gelu", "[[64, 128, 3072], []]", f'[{BF16}, ""]', '["", ""]')
    assert (gelu.bytes_read, gelu.bytes_written) == (H_BYTES, H_BYTES)
    assert gelu.flops == n * ELEMENTWISE_FLOPS["gelu"]
    mul = cost("aten::mul", "[[64, 128, 3072], [64, 128, 3072]]", f"[{BF16}, {BF16}]")
    assert (mul.bytes_read, mul.bytes_written) == (2 * H_BYTES, H_BYTES)
    assert mul.bytes == 150_994_944  # the blog's "151 MB"
    assert mul.flops == n
    # Inductor's fused gelu·mul: reads both mm outputs, writes one in place: the same 151 MB
    fused = cost(
        "triton_poi_fused__unsafe_view_gelu_mul_0",
        "[[64, 128, 3072], [8192, 3072], []]",
        f'[{BF16}, {BF16}, "Scalar"]',
        '["", "", "25165824"]',
    )
    assert fused.bytes == 150_994_944
    assert fused.flops == n * (0 + ELEMENTWISE_FLOPS["gelu"] + ELEMENTWISE_FLOPS["mul"])  # view is free
    assert fused.kind == "pointwise"


def test_linear_with_bias_is_addmm() -> None:
    # linear_eager: nn.Linear(32, 64), batch 1024, bf16
    types = f'[{BF16}, {BF16}, {BF16}, "Scalar", "Scalar"]'
    addmm = cost("aten::addmm", "[[64], [1024, 32], [32, 64], [], []]", types, '["", "", "", "1", "1"]')
    assert addmm.flops == 2 * 1024 * 64 * 32 == 4_194_304
    assert addmm.bytes_read == (64 + 1024 * 32 + 32 * 64) * 2 == 69_760
    assert addmm.bytes_written == 1024 * 64 * 2
    assert any("bias add" in n for n in addmm.notes)
    linear = cost("aten::linear", "[[1024, 32], [64, 32], [64]]", f"[{BF16}, {BF16}, {BF16}]")
    assert (linear.flops, linear.bytes_read, linear.bytes_written) == (
        addmm.flops,
        addmm.bytes_read,
        addmm.bytes_written,
    )


def test_addmm_out_variant_takes_the_out_dtype() -> None:
    # mlp_train_compiled: addmm(bias, x, w, beta, alpha, out) in fp32
    c = cost(
        "aten::addmm",
        "[[10], [64, 512], [512, 10], [], [], [64, 10]]",
        '["float", "float", "float", "Scalar", "Scalar", "float"]',
    )
    assert c.flops == 2 * 64 * 10 * 512
    assert c.bytes_read == (10 + 64 * 512 + 512 * 10) * 4
    assert c.bytes_written == 64 * 10 * 4
    assert c.dtype == "fp32"


# --- more GEMM shapes ---------------------------------------------------------------------------


def test_transformer_mm_shapes() -> None:
    c = cost("aten::mm", "[[4096, 512], [512, 2048]]", f"[{BF16}, {BF16}]")
    assert c.flops == 2 * 4096 * 2048 * 512 == 8_589_934_592
    grad_w = cost("aten::mm", "[[512, 4096], [4096, 2048]]", f"[{BF16}, {BF16}]")
    assert grad_w.flops == 2 * 512 * 2048 * 4096
    assert grad_w.bytes_written == 512 * 2048 * 2


def test_bmm_and_baddbmm() -> None:
    b = cost("aten::bmm", "[[16, 256, 64], [16, 64, 256]]", f"[{BF16}, {BF16}]")
    assert b.flops == 2 * 16 * 256 * 256 * 64
    assert b.bytes_written == 16 * 256 * 256 * 2
    bad = cost(
        "aten::baddbmm",
        "[[16, 256, 256], [16, 256, 64], [16, 64, 256], [], []]",
        f'[{BF16}, {BF16}, {BF16}, "Scalar", "Scalar"]',
    )
    assert bad.flops == b.flops
    assert bad.bytes_read == b.bytes_read + 16 * 256 * 256 * 2


@pytest.mark.parametrize(
    ("dims", "flops"),
    [
        ("[[5], [5]]", 2 * 5),  # dot product
        ("[[4, 5], [5]]", 2 * 4 * 5),  # matrix-vector
        ("[[5], [5, 6]]", 2 * 5 * 6),  # vector-matrix
        ("[[2, 1, 4, 5], [3, 5, 6]]", 2 * (2 * 3) * 4 * 6 * 5),  # broadcast batch (2, 3)
    ],
)
def test_matmul_shapes(dims: str, flops: int) -> None:
    assert cost("aten::matmul", dims, '["float", "float"]').flops == flops


def test_scaled_mm_is_fp8() -> None:
    c = cost(
        "aten::_scaled_mm",
        "[[8192, 8192], [8192, 8192], [], [], [], [], [], []]",
        '["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar", "Scalar"]',
        '["", "", "", "", "", "", "15", "False"]',
    )
    assert c.flops == 2 * 8192**3
    assert c.dtype == "fp8"
    assert c.bytes_read == 2 * 8192 * 8192 + 2 * 4  # 1 byte per element, plus two 0-dim fp32 scales
    assert c.bytes_written == 8192 * 8192 * 2  # "15" = bf16 output


# --- dtype sizes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "size", "name"),
    [
        ("c10::BFloat16", 2, "bf16"),
        ("c10::Half", 2, "fp16"),
        ("float", 4, "fp32"),
        ("double", 8, "fp64"),
        ("long int", 8, "int64"),
        ("int", 4, "int32"),
        ("short int", 2, "int16"),
        ("bool", 1, "bool"),
        ("unsigned char", 1, "uint8"),
        ("signed char", 1, "int8"),
        ("c10::Float8_e4m3fn", 1, "fp8"),
        ("c10::complex<float>", 8, "complex64"),
    ],
)
def test_dtype_sizes(type_name: str, size: int, name: str) -> None:
    assert dtype_size(type_name) == size
    assert dtype_name(type_name) == name


@pytest.mark.parametrize("type_name", ["Scalar", "", "TensorList", "ScalarList", "GenericList", None])
def test_non_tensor_types_have_no_size(type_name: str | None) -> None:
    assert dtype_size(type_name) is None
    assert dtype_name(type_name) is None


def test_parse_args_handles_tensor_lists_and_scalars() -> None:
    args = parse_args(
        "[[[512, 256], [512]], [[512, 256], [512]], [], [64]]",
        '["TensorList", "TensorList", "Scalar", "float"]',
    )
    assert args is not None
    assert [a.is_tensor for a in args] == [False, False, False, True]
    assert args[3].nbytes == 256
    assert parse_args("not json", "[]") is None
    assert parse_args(None, '["float"]') is None
    assert parse_args([[2, 3]], ["float"]) == parse_args("[[2, 3]]", '["float"]')  # decoded lists too


# --- convolution --------------------------------------------------------------------------------

CONV_TYPES = (
    '["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]'
)


def test_convolution_with_concrete_stride_and_padding() -> None:
    # ResNet stem: 7×7/2 conv, pad 3, on 224×224 → 112×112 output
    c = cost(
        "aten::convolution",
        "[[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], [], [], []]",
        CONV_TYPES,
        '["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]',
    )
    assert c.flops == 2 * 8 * (112 * 112) * (64 * 3 * 7 * 7) == 1_888_223_232
    assert c.bytes_read == (8 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 64) * 4
    assert c.bytes_written == 8 * 64 * 112 * 112 * 4
    assert c.kind == "convolution"
    assert not any("not recorded" in n for n in c.notes)
    cudnn = cost(
        "aten::cudnn_convolution",
        "[[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
        '["float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", '
        '"Scalar"]',
        '["", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"]',
    )
    assert (cudnn.flops, cudnn.bytes_written) == (c.flops, c.bytes_written)


def test_convolution_without_concrete_inputs_states_the_assumption() -> None:
    c = cost(
        "aten::convolution", "[[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], [], [], []]", CONV_TYPES
    )
    assert c.flops == 2 * 8 * (224 * 224) * (64 * 3 * 7 * 7)
    assert any("assumed stride 1" in n for n in c.notes)


def test_grouped_and_transposed_convolutions() -> None:
    # depthwise 3×3, pad 1, 32 groups: the weight [32, 1, 3, 3] already carries the grouping
    depthwise = cost(
        "aten::conv2d",
        "[[1, 32, 56, 56], [32, 1, 3, 3], [], [], [], [], []]",
        '["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]',
        '["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "32"]',
    )
    assert depthwise.flops == 2 * 56 * 56 * (32 * 1 * 3 * 3)
    assert depthwise.bytes_written == 32 * 56 * 56 * 4
    # transposed 4×4/2, pad 1: 8×8 → 16×16; weight [C_in=16, C_out=8, 4, 4]
    up = cost(
        "aten::conv_transpose2d",
        "[[1, 16, 8, 8], [16, 8, 4, 4], [], [], [], [], [], []]",
        '["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList"]',
        '["", "", "", "[2, 2]", "[1, 1]", "[0, 0]", "1", "[1, 1]"]',
    )
    assert up.flops == 2 * (8 * 8) * (16 * 8 * 4 * 4)
    assert up.bytes_written == 8 * 16 * 16 * 4


# --- attention ----------------------------------------------------------------------------------

QKV = "[[16, 8, 256, 64], [16, 8, 256, 64], [16, 8, 256, 64], [], [], [], [], []]"
QKV_TYPES = f'[{BF16}, {BF16}, {BF16}, "", "Scalar", "Scalar", "", "Scalar"]'
SDPA_FLOPS = 4 * 16 * 8 * 256 * 256 * 64  # 4·B·H·L·S·E = 2,147,483,648


def test_sdpa_forward_from_the_transformer_trace() -> None:
    c = cost(
        "aten::scaled_dot_product_attention",
        QKV,
        QKV_TYPES,
        '["", "", "", "", "0.10000000000000001", "False", "", "False"]',
    )
    assert c.flops == SDPA_FLOPS == 2_147_483_648
    qkv_bytes = 16 * 8 * 256 * 64 * 2
    assert (c.bytes_read, c.bytes_written) == (3 * qkv_bytes, qkv_bytes)
    assert c.kind == "attention"
    cudnn = cost(
        "aten::_scaled_dot_product_cudnn_attention",
        "[[16, 8, 256, 64], [16, 8, 256, 64], [16, 8, 256, 64], [], [], [], [], [], []]",
        f'[{BF16}, {BF16}, {BF16}, "", "Scalar", "Scalar", "Scalar", "Scalar", ""]',
        '["", "", "", "", "True", "0.10000000000000001", "False", "False", ""]',
    )
    assert cudnn.flops == SDPA_FLOPS


def test_sdpa_causal_unrecorded_and_value_dim() -> None:
    causal = cost(
        "aten::scaled_dot_product_attention", QKV, QKV_TYPES, '["", "", "", "", "0.0", "True", "", "False"]'
    )
    assert causal.flops == SDPA_FLOPS // 2
    unknown = cost("aten::scaled_dot_product_attention", QKV, QKV_TYPES)
    assert unknown.flops == SDPA_FLOPS
    assert any("is_causal not recorded" in n for n in unknown.notes)
    wide_v = cost(
        "aten::scaled_dot_product_attention",
        "[[2, 4, 128, 64], [2, 4, 512, 64], [2, 4, 512, 128], [], [], [], [], []]",
        QKV_TYPES,
    )
    assert wide_v.flops == 2 * 2 * 4 * 128 * 512 * (64 + 128)  # 2·B·H·L·S·(E + Ev)
    assert wide_v.bytes_written == 2 * 4 * 128 * 128 * 2


def test_flash_forward_uses_the_b_l_h_e_layout() -> None:
    c = cost(
        "aten::_flash_attention_forward",
        "[[2, 128, 4, 64], [2, 512, 4, 64], [2, 512, 4, 64], [], [], [], [], [], [], [], []]",
        f'[{BF16}, {BF16}, {BF16}, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""]',
    )
    assert c.flops == 4 * 2 * 4 * 128 * 512 * 64


def test_sdpa_backward_is_two_and_a_half_forwards() -> None:
    c = cost(
        "aten::_scaled_dot_product_cudnn_attention_backward",
        "[[16, 8, 256, 64], [16, 8, 256, 64], [16, 8, 256, 64], [16, 8, 256, 64], [16, 8, 256, 64], "
        "[16, 8, 256, 1], [], [], [], [], [], [], [], [], [], []]",
        f'[{BF16}, {BF16}, {BF16}, {BF16}, {BF16}, "float", "long int", "long int", "", "", "", '
        '"Scalar", "Scalar", "Scalar", "Scalar", ""]',
        '["", "", "", "", "", "", "", "", "", "", "", "256", "256", "0.10000000000000001", "False", ""]',
    )
    assert c.flops == SDPA_FLOPS * 5 // 2
    qkv_bytes = 16 * 8 * 256 * 64 * 2
    assert c.bytes_written == 3 * qkv_bytes  # dQ, dK, dV
    assert c.bytes_read == 5 * qkv_bytes + 16 * 8 * 256 * 4 + 2 * 8  # + logsumexp + 2 philox int64s


# --- elementwise, reductions, copies --------------------------------------------------------------


def test_in_place_and_broadcast_elementwise() -> None:
    add_ = cost("aten::add_", "[[16, 256, 512], [16, 256, 512], []]", '["float", "float", "Scalar"]')
    n = 16 * 256 * 512
    assert (add_.flops, add_.bytes_read, add_.bytes_written) == (n, 2 * n * 4, n * 4)
    bias = cost("aten::add_", "[[256, 16, 1536], [1536], []]", f'[{BF16}, {BF16}, "Scalar"]')
    m = 256 * 16 * 1536
    assert (bias.bytes_read, bias.bytes_written) == ((m + 1536) * 2, m * 2)
    # mixed dtypes promote: fp32 + bf16 → fp32 output
    mixed = cost("aten::add", "[[16, 256, 512], [16, 256, 512], []]", f'["float", {BF16}, "Scalar"]')
    assert (mixed.bytes_read, mixed.bytes_written, mixed.dtype) == (n * 4 + n * 2, n * 4, "fp32")
    # a Python scalar recorded as a 0-dim double tensor does not promote
    scaled = cost("aten::mul", "[[16, 256, 512], []]", '["float", "double"]')
    assert (scaled.bytes_written, scaled.dtype) == (n * 4, "fp32")


def test_copies_and_fills() -> None:
    n = 16 * 256 * 512
    to_bf16 = cost("aten::copy_", "[[16, 256, 512], [16, 256, 512], []]", f'[{BF16}, "float", "Scalar"]')
    assert (to_bf16.bytes_read, to_bf16.bytes_written, to_bf16.flops) == (n * 4, n * 2, 0)
    to_copy = cost(
        "aten::_to_copy",
        "[[16, 256, 512], [], [], [], [], [], []]",
        '["float", "Scalar", "", "", "", "Scalar", ""]',
        '["", "15", "", "", "", "False", ""]',
    )
    assert (to_copy.bytes_read, to_copy.bytes_written, to_copy.dtype) == (n * 4, n * 2, "bf16")
    zero = cost("aten::zero_", "[[3, 256, 16, 512]]", f"[{BF16}]")
    assert (zero.bytes_read, zero.bytes_written, zero.kind) == (0, 3 * 256 * 16 * 512 * 2, "fill")


def test_reductions_use_the_recorded_dims() -> None:
    col_sum = cost(
        "aten::sum",
        "[[4096, 512], [], [], []]",
        f'[{BF16}, "ScalarList", "Scalar", ""]',
        '["", "[0]", "True", ""]',
    )
    assert (col_sum.bytes_read, col_sum.bytes_written) == (4096 * 512 * 2, 512 * 2)
    full = cost("aten::mean", "[[16, 256, 512], []]", '["float", ""]', '["", ""]')
    assert full.bytes_written == 4
    inductor = cost(
        "triton_per_fused_sum_threshold_backward_1",
        "[[64, 512], [64, 512], [1, 512], [], []]",
        '["float", "float", "float", "Scalar", "Scalar"]',
        '["", "", "", "512", "64"]',
    )
    assert (inductor.bytes_read, inductor.bytes_written) == (2 * 64 * 512 * 4, 512 * 4)
    assert inductor.kind == "persistent-reduction"


def test_norms_softmax_dropout() -> None:
    n = 16 * 256 * 512
    ln = cost(
        "aten::native_layer_norm",
        "[[16, 256, 512], [], [512], [512], []]",
        '["float", "ScalarList", "float", "float", "Scalar"]',
    )
    assert (ln.bytes_read, ln.bytes_written, ln.kind) == (n * 4 + 2 * 512 * 4, n * 4, "norm")
    sm = cost("aten::_log_softmax", "[[64, 10], [], []]", '["float", "Scalar", "Scalar"]')
    assert (sm.bytes_read, sm.bytes_written, sm.flops) == (640 * 4, 640 * 4, 5 * 640)
    drop = cost(
        "aten::native_dropout",
        "[[16, 256, 512], [], []]",
        f'[{BF16}, "Scalar", "Scalar"]',
        '["", "0.1", "True"]',
    )
    assert (drop.bytes_read, drop.bytes_written) == (n * 2, n * 2 + n)  # output + bool mask


@pytest.mark.parametrize(
    ("name", "dims", "types"),
    [
        ("aten::view", "[[8192, 3072], []]", f'[{BF16}, "ScalarList"]'),
        ("aten::t", "[[3072, 768]]", f"[{BF16}]"),
        (
            "aten::_foreach_add_",
            "[[[512, 256], [512]], [[512, 256], [512]], []]",
            '["TensorList", "TensorList", "Scalar"]',
        ),
        ("AddmmBackward0", "[[4096, 2048]]", f"[{BF16}]"),
        ("aten::mm", "[[8192, 768], [3072, 768]]", f"[{BF16}, {BF16}]"),  # K mismatch
        ("aten::mm", "[[], []]", '["Scalar", "Scalar"]'),
        ("aten::mm", "not json", "[]"),
        ("aten::linear", "[[64, 128, 768], [3072, 700], []]", f'[{BF16}, {BF16}, ""]'),
        ("triton_unknown_thing", "[[4]]", '["float"]'),
        ("aten::scaled_dot_product_attention", "[[16, 8, 256, 64]]", f"[{BF16}]"),
    ],
)
def test_unknown_or_malformed_ops_give_none(name: str, dims: str, types: str) -> None:
    assert op_cost(name, dims, types) is None


def test_missing_shapes_give_none() -> None:
    assert op_cost("aten::mm", None, None) is None
    assert op_cost("aten::mm", "", "") is None
    assert op_cost("aten::mm", "[[2, 3], [3, 4]]", None) is None


def test_op_cost_columns_over_unique_rows() -> None:
    ops = pl.DataFrame(
        {
            "name": ["aten::mm", "aten::mm", "aten::view", "aten::gelu", "aten::mm"],
            "input_dims": [
                "[[8192, 768], [768, 3072]]",
                "[[8192, 768], [768, 3072]]",
                "[[8192, 3072], []]",
                "[[64, 128, 3072], []]",
                None,
            ],
            "input_type": [
                f"[{BF16}, {BF16}]",
                f"[{BF16}, {BF16}]",
                f'[{BF16}, "ScalarList"]',
                f'[{BF16}, ""]',
                None,
            ],
        }
    )
    costs = op_cost_columns(ops)
    assert costs.height == 4
    assert costs.schema["flops"] == pl.Int64
    assert costs.schema["cost_notes"] == pl.List(pl.String)
    joined = ops.join(costs, on=["name", "input_dims", "input_type"], how="left", nulls_equal=True)
    assert joined["flops"].to_list() == [GEMM_FLOPS, GEMM_FLOPS, None, 64 * 128 * 3072 * 8, None]
    assert joined["bytes"].to_list()[3] == 2 * H_BYTES
    with_concrete = ops.with_columns(pl.lit('["", ""]').alias("concrete_inputs"))
    assert "concrete_inputs" in op_cost_columns(with_concrete).columns
    empty = op_cost_columns(ops.clear())
    assert empty.height == 0
    assert empty.schema["bytes"] == pl.Int64

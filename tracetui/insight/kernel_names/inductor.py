"""Handlers for Inductor's generated Triton kernels and user Triton kernels."""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.cpp import clip_text
from tracetui.insight.kernel_names.fields import KernelName

# --------------------------------------------------------------------------------------------
# Inductor / Triton

# Multi-word op names that can appear in Inductor's fused kernel names (joined with "_", so they
# cannot be split on "_" alone). A name missing here is split into words: harmless, only less tidy.
_INDUCTOR_OPS: frozenset[str] = frozenset(
    {
        "_unsafe_view",
        "_unsafe_index",
        "_unsafe_index_put",
        "_to_copy",
        "_softmax",
        "_log_softmax",
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional",
        "_native_batch_norm_legit_no_training",
        "_fused_rms_norm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_mm",
        "_weight_norm_interface",
        "threshold_backward",
        "gelu_backward",
        "silu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "native_layer_norm",
        "native_layer_norm_backward",
        "native_group_norm",
        "native_group_norm_backward",
        "native_batch_norm_backward",
        "native_dropout",
        "native_dropout_backward",
        "layer_norm",
        "group_norm",
        "batch_norm",
        "rms_norm",
        "nll_loss_forward",
        "nll_loss_backward",
        "nll_loss2d_forward",
        "nll_loss2d_backward",
        "embedding_dense_backward",
        "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward",
        "avg_pool2d",
        "avg_pool2d_backward",
        "convolution_backward",
        "constant_pad_nd",
        "masked_fill",
        "index_put",
        "index_select",
        "index_add",
        "scatter_add",
        "scatter_reduce",
        "select_scatter",
        "slice_scatter",
        "as_strided",
        "as_strided_scatter",
        "split_with_sizes",
        "full_like",
        "zeros_like",
        "ones_like",
        "empty_like",
        "new_zeros",
        "new_ones",
        "new_empty",
        "scalar_tensor",
        "clamp_min",
        "clamp_max",
        "leaky_relu",
        "leaky_relu_backward",
        "hardtanh_backward",
        "var_mean",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "bitwise_xor",
        "logical_and",
        "logical_or",
        "logical_not",
        "lift_fresh",
        "lift_fresh_copy",
        "copy_",
        "add_",
        "mul_",
        "div_",
        "sub_",
        "fill_",
        "zero_",
        "addcmul_",
        "addcdiv_",
        "lerp_",
        "unbind_int",
        "flex_attention",
        "flex_attention_backward",
    }
)
_INDUCTOR_MAX_WORDS = max(len(op.strip("_").split("_")) for op in _INDUCTOR_OPS) + 1


def split_inductor_ops(fused: str) -> tuple[str, ...]:
    """Split Inductor's ``_``-joined op list (``_unsafe_view_gelu_mul``) into op names.

    A double underscore marks an op whose name starts with ``_`` (``fused__unsafe_view``). Known
    multi-word ops (:data:`_INDUCTOR_OPS`) are matched longest-first; other words stand alone.
    """
    words = fused.split("_")
    ops: list[str] = []
    i = 0
    while i < len(words):
        prefix = ""
        if words[i] == "":
            prefix = "_"
            i += 1
            if i >= len(words):
                break
            if words[i] == "":
                continue
        best = 1
        for n in range(min(_INDUCTOR_MAX_WORDS, len(words) - i), 1, -1):
            candidate = prefix + "_".join(words[i : i + n])
            # in-place ops end with "_": "add_" then the next word.
            if candidate in _INDUCTOR_OPS:
                best = n
                break
            if i + n < len(words) and words[i + n] == "" and candidate + "_" in _INDUCTOR_OPS:
                best = n
                break
        op = prefix + "_".join(words[i : i + best])
        i += best
        if i < len(words) and words[i] == "" and op + "_" in _INDUCTOR_OPS:
            op += "_"
            i += 1
        ops.append(op)
    return tuple(op for op in ops if op)


_INDUCTOR_KINDS = {
    "poi": ("pointwise", "pointwise"),
    "red": ("reduction", "reduction"),
    "per": ("persistent-reduction", "persistent reduction (one block holds a whole row)"),
    "tem": ("template", "template (a Triton GEMM/attention template, e.g. from max-autotune)"),
    "for": ("foreach", "foreach (one launch over a list of tensors)"),
    "unk": ("other", "unknown category"),
}
_METADATA_OPS = frozenset(
    {"_unsafe_view", "view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze"}
)
_GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "convolution"})


def decode_inductor(m: re.Match[str], name: str) -> KernelName:
    prefix, fused, ops_text, kid = m.group(1), m.group(2), m.group(3), m.group(4)
    kind, kind_words = _INDUCTOR_KINDS[prefix]
    ops = split_inductor_ops(ops_text) if ops_text else ()
    notes = [
        f"Inductor-generated Triton kernel (torch.compile): {kind_words}"
        + (f" fusing {', '.join(ops)}" if ops else "")
        + (f"; kernel #{kid} of its graph" if kid is not None else "")
    ]
    if fused and "__" in f"{fused}{ops_text}":
        notes.append("a double underscore in the name marks an op whose name starts with '_'")
    meta = [op for op in ops if op in _METADATA_OPS]
    if meta:
        notes.append(
            f"{', '.join(meta)} only rewrite{'s' if len(meta) == 1 else ''} shape/stride metadata: "
            "no arithmetic and no memory traffic of their own"
        )
    if prefix == "tem" and any(op in _GEMM_OPS for op in ops):
        notes.append("a Triton GEMM template chosen by autotuning instead of cuBLAS")
    op_text = "+".join(ops) if ops else ""
    short = f"inductor {prefix} {op_text}".rstrip() + (f" #{kid}" if kid is not None else "")
    return KernelName(
        name=name,
        family="inductor",
        kind=kind,
        op=op_text or None,
        fused_ops=ops,
        kernel_id=int(kid) if kid is not None else None,
        short=clip_text(short),
        notes=tuple(notes),
    )


_USER_KIND_WORDS: tuple[tuple[str, str], ...] = (
    ("matmul", "gemm"),
    ("gemm", "gemm"),
    ("_mm", "gemm"),
    ("attn", "attention"),
    ("attention", "attention"),
    ("flash", "attention"),
    ("softmax", "softmax"),
    ("norm", "norm"),
    ("reduce", "reduction"),
    ("sum", "reduction"),
    ("geglu", "elementwise"),
    ("swiglu", "elementwise"),
    ("gelu", "elementwise"),
    ("silu", "elementwise"),
    ("relu", "elementwise"),
    ("add", "elementwise"),
    ("mul", "elementwise"),
    ("copy", "copy"),
)


# Words of a user Triton kernel's name that name what it computes, and the ops they stand for
# (a GLU is its activation times the other projection: ``geglu`` is gelu and mul).
_USER_OP_WORDS: dict[str, tuple[str, ...]] = {
    "matmul": ("gemm",),
    "gemm": ("gemm",),
    "mm": ("gemm",),
    "geglu": ("gelu", "mul"),
    "swiglu": ("silu", "mul"),
    "reglu": ("relu", "mul"),
    "gelu": ("gelu",),
    "silu": ("silu",),
    "relu": ("relu",),
    "sigmoid": ("sigmoid",),
    "tanh": ("tanh",),
    "softmax": ("softmax",),
    "bias": ("add",),
    "add": ("add",),
    "mul": ("mul",),
}
_BACKWARD_WORDS = frozenset({"bwd", "backward", "grad"})
# in a backward kernel an activation's op is its backward (ATen's kernels say gelu_backward); mul stays mul
_USER_BACKWARD_OPS = frozenset({"gelu", "silu", "relu", "sigmoid", "tanh", "softmax"})


def user_triton_ops(ident: str) -> tuple[str, ...]:
    """The ops a user Triton kernel's name lists, in order, when it lists more than one (it fuses them):
    ``_gate_up_gemm_geglu_kernel`` → gemm, gelu, mul; ``_geglu_bwd_kernel`` → gelu_backward, mul."""
    words = ident.lower().strip("_").split("_")
    backward = not _BACKWARD_WORDS.isdisjoint(words)
    ops = (op for word in words for op in _USER_OP_WORDS.get(word, ()))
    named = dict.fromkeys(f"{op}_backward" if backward and op in _USER_BACKWARD_OPS else op for op in ops)
    return tuple(named) if len(named) > 1 else ()


def decode_user_triton(m: re.Match[str], name: str) -> KernelName:
    ident = m.group(0)
    lowered = ident.lower()
    kind = next((k for word, k in _USER_KIND_WORDS if word in lowered), "custom")
    op = ident.strip("_")
    op = op.removesuffix("_kernel") or op
    fused = user_triton_ops(ident)
    notes = [
        "a bare function name with no C++ signature: most likely a user @triton.jit kernel "
        "(CUDA C++ kernels show their parameter list)"
    ]
    if fused:
        epilogue = " (a GEMM with the rest in its epilogue)" if kind == "gemm" else ""
        notes.append(f"its name lists {', '.join(fused)}: read as one kernel fusing them{epilogue}")
    return KernelName(
        name=name,
        family="triton",
        kind=kind,
        op=op,
        fused_ops=fused,
        short=clip_text(f"triton {ident}"),
        notes=tuple(notes),
    )

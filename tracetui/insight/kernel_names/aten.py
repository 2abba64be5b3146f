"""Handlers for ATen's own kernels (elementwise, reductions, named kernels), CUB, and the fallback."""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.cpp import (
    clip_text,
    collapse_templates,
    cpp_dtype,
    function_head,
    template_args,
)
from tracetui.insight.kernel_names.fields import KernelName

# --------------------------------------------------------------------------------------------
# ATen

# Functor / lambda-context patterns inside ATen elementwise templates → op. First match wins.
_ATEN_FUNCTORS: tuple[tuple[str, str], ...] = (
    (r"GeluBackward", "gelu_backward"),
    (r"Gelu", "gelu"),
    (r"masked_scale", "dropout"),
    (r"bfloat16_copy_kernel", "copy"),
    (r"float8_copy_kernel", "copy"),
    (r"direct_copy_kernel|copy_kernel|CopyKernel", "copy"),
    (r"FillFunctor|fill_kernel", "fill"),
    (r"launch_clamp_scalar|clamp_min|clamp_max|clamp_kernel|ClampLimits", "clamp"),
    (r"threshold_kernel", "threshold"),
    (r"pow_tensor_\w+|pow_kernel|PowFunctor", "pow"),
    (r"silu_backward|SiluBackward", "silu_backward"),
    (r"silu_kernel|SiluFunctor", "silu"),
    (r"sigmoid_backward", "sigmoid_backward"),
    (r"sigmoid", "sigmoid"),
    (r"tanh_backward", "tanh_backward"),
    (r"tanh_kernel|TanhFunctor", "tanh"),
    (r"rsqrt", "rsqrt"),
    (r"\bSqrt<|sqrt_kernel", "sqrt"),
    (r"LerpFunctor|lerp_kernel", "lerp"),
    (r"addcmul", "addcmul"),
    (r"addcdiv", "addcdiv"),
    (r"MulFunctor|std::multiplies|mul_kernel", "mul"),
    (r"CUDAFunctor(?:OnSelf|OnOther)?_add|AddFunctor|std::plus|add_kernel", "add"),
    (r"DivFunctor|div_true|div_trunc|div_floor|std::divides|DivTrue", "div"),
    (r"std::minus|sub_kernel|SubFunctor", "sub"),
    (r"\bexp_kernel|\bExp<|exp2_kernel", "exp"),
    (r"\blog_kernel|\bLog<|log1p|log2_kernel", "log"),
    (r"neg_kernel|NegFunctor|std::negate", "neg"),
    (r"abs_kernel|AbsFunctor", "abs"),
    (r"where_kernel", "where"),
    (r"maximum_kernel|MaxFunctor|MaxNanFunctor", "maximum"),
    (r"minimum_kernel|MinFunctor|MinNanFunctor", "minimum"),
    (r"[Rr]eciprocal", "reciprocal"),
    (r"\bsin_kernel", "sin"),
    (r"\bcos_kernel", "cos"),
    (r"softplus", "softplus"),
    (r"leaky_relu", "leaky_relu"),
    (r"hardtanh", "hardtanh"),
    (r"hardswish", "hardswish"),
    (r"\belu_kernel", "elu"),
    (r"bitwise_\w+?_kernel|Bitwise\w+Functor", "bitwise"),
    (r"logical_not|logical_and|logical_or", "logical"),
    (r"compare|CompareEq|Compare\w*Functor|\beq_kernel|\bne_kernel|\blt_kernel|\bgt_kernel", "compare"),
    (r"nan_to_num", "nan_to_num"),
    (r"index_put|index_elementwise|index_kernel", "index"),
    (r"cat_\w+kernel", "cat"),
    (r"triu_tril", "triu/tril"),
    (r"arange|linspace|range_kernel", "arange"),
    (r"sign_kernel|signbit", "sign"),
    (r"fmod|remainder", "remainder"),
    (r"round_kernel|floor_kernel|ceil_kernel|trunc_kernel", "round"),
)
_ATEN_FUNCTOR_RES = tuple((re.compile(p), op) for p, op in _ATEN_FUNCTORS)

_OP_KINDS = {"copy": "copy", "fill": "fill", "index": "index", "cat": "copy"}

_REDUCE_OPS: tuple[tuple[str, str], ...] = (
    (r"sum_functor|SumOps|sum_kernel", "sum"),
    (r"nansum", "nansum"),
    (r"MeanOps|mean_kernel", "mean"),
    (r"WelfordOps", "var/std"),
    (r"ArgMaxOps", "argmax"),
    (r"ArgMinOps", "argmin"),
    (r"MaxOps|max_values|MaxNanFunctor|max_kernel", "max"),
    (r"MinOps|min_values|MinNanFunctor|min_kernel", "min"),
    (r"NormOps|NormTwoOps|NormOneOps|NormZeroOps|AbsMaxOps|norm_kernel", "norm"),
    (r"prod_functor|ProdOps|prod_kernel", "prod"),
    (r"LogSumExp|logsumexp", "logsumexp"),
    (r"and_kernel|And<|all_kernel", "all"),
    (r"or_kernel|Or<|any_kernel", "any"),
)

_FOREACH_WRAPPERS = {
    "BinaryOpScalarFunctor": "scalar",
    "BinaryOpScalarListFunctor": "scalar list",
    "BinaryOpListAlphaFunctor": "list, alpha",
    "BinaryOpScalarTensorFunctor": "scalar tensor",
    "PointwiseOpScalarFunctor": "pointwise, scalar",
    "PointwiseOpScalarListFunctor": "pointwise, scalar list",
    "PointwiseOpListFunctor": "pointwise, list",
    "TernaryOpScalarFunctor": "ternary, scalar",
    "TernaryOpListFunctor": "ternary, list",
    "UnaryOpFunctor": "unary",
    "ZeroFunctor": "zero",
    "CopyFunctor": "copy",
}

_ATEN_NAMED: tuple[tuple[str, str, str, str], ...] = (
    # (regex on the function name, kind, op, note); first match wins.
    (r"multi_tensor_apply_kernel", "foreach", "foreach", ""),
    (
        r"(?:^|::)(?:vectorized_|unrolled_)?elementwise_kernel(?:_with_index|_helper)?$",
        "elementwise",
        "",
        "",
    ),
    (r"(?:^|::)reduce_kernel$", "reduction", "", ""),
    (r"softmax_warp_forward|cunn_SoftMaxForward|softmax_forward", "softmax", "softmax forward", ""),
    (r"softmax_warp_backward|cunn_SoftMaxBackward|softmax_backward", "softmax", "softmax backward", ""),
    (
        r"layer_norm_grad|GammaBetaBackward|ComputeInternalGradients|ComputeGradientFusedParams|"
        r"LayerNormBackward|layer_norm_backward",
        "norm",
        "layer_norm backward",
        "",
    ),
    (r"layer_norm|LayerNormForward|RowwiseMoments", "norm", "layer_norm forward", ""),
    (r"rms_?norm|RmsNorm", "norm", "rms_norm", ""),
    (r"group_norm|GroupNorm", "norm", "group_norm", ""),
    (
        r"batch_norm|BatchNorm|welford_kernel|batch_norm_collect|batch_norm_transform",
        "norm",
        "batch_norm",
        "",
    ),
    (r"nll_loss\w*forward|ClassNLLCriterion_updateOutput", "loss", "nll_loss forward", ""),
    (r"nll_loss\w*backward|ClassNLLCriterion_updateGradInput", "loss", "nll_loss backward", ""),
    (r"cross_entropy|mse|smooth_l1|binary_cross_entropy|kl_div", "loss", "loss", ""),
    (r"fused_dropout", "elementwise", "dropout", "dropout: random mask and scale in one kernel"),
    (
        r"distribution_elementwise|distribution_nullary|philox|curand|randperm|bernoulli|"
        r"multinomial|random",
        "rng",
        "",
        "",
    ),
    (r"CatArrayBatchedCopy|cat_", "copy", "cat", "torch.cat: copies the inputs into one tensor"),
    (
        r"index|Index|gather|Gather|scatter|Scatter|embedding|Embedding|take|put_",
        "index",
        "",
        "",
    ),
    (r"sort|Sort|radix|Radix|bitonic|topk|TopK|gatherTopK|segmented", "sort", "", ""),
    (r"scan|Scan|cumsum|cumprod", "scan", "", ""),
    (r"pool|Pool", "pooling", "", ""),
    (r"upsample|Upsample|interpolate|grid_sampler", "elementwise", "", ""),
    (r"im2col|col2im|vol2col|col2vol", "copy", "", ""),
    (r"amp_update_scale|non_finite_check_and_unscale", "foreach", "amp unscale/check", ""),
)
# Norm kernels that are one part of a norm (several run per call): which part.
_NORM_PARTS = {
    "batch_norm_collect_statistics_kernel": "batch_norm statistics",
    "batch_norm_collect_statistics_channels_last_kernel": "batch_norm statistics",
    "batch_norm_reduce_statistics_kernel": "batch_norm reduce statistics",
    "batch_norm_transform_input_kernel": "batch_norm forward",
    "batch_norm_transform_input_channels_last_kernel": "batch_norm forward",
    "batch_norm_backward_reduce_kernel": "batch_norm backward reduce",
    "batch_norm_backward_reduce_channels_last_kernel": "batch_norm backward reduce",
    "batch_norm_backward_elemt_kernel": "batch_norm backward",
    "batch_norm_backward_elemt_channels_last_kernel": "batch_norm backward",
    "batch_norm_backward_kernel": "batch_norm backward",
    "GammaBetaBackwardCUDAKernel": "layer_norm backward (gamma, beta)",
    "GammaBetaBackwardCUDAKernelTemplate": "layer_norm backward (gamma, beta)",
    "GammaBetaBackwardSimpleCUDAKernel": "layer_norm backward (gamma, beta)",
    "GammaBetaBackwardCUDAKernel_32x32": "layer_norm backward (gamma, beta)",
    "layer_norm_grad_input_kernel": "layer_norm backward (input)",
    "layer_norm_grad_input_kernel_vectorized": "layer_norm backward (input)",
}
_ATEN_NAMED_RES = tuple((re.compile(p), kind, op, note) for p, kind, op, note in _ATEN_NAMED)


def _aten_functor_op(text: str) -> str | None:
    for regex, op in _ATEN_FUNCTOR_RES:
        if regex.search(text):
            return op
    return None


def decode_aten(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
    func = head.rsplit("::", 1)[-1]
    args = template_args(name)
    targs = ", ".join(args)
    kind, op, note = next(
        ((k, o, n) for regex, k, o, n in _ATEN_NAMED_RES if regex.search(head)),
        ("other", func, ""),
    )
    notes: list[str] = [note] if note else []
    vector_width: int | None = None
    variant: str | None = None
    dtype = cpp_dtype(targs, args[0]) if args else None
    if dtype is None and (param := re.findall(r"\{lambda\(([\w:]+)\)", targs)):
        dtype = cpp_dtype(param[0], param[0])  # the element type: the first lambda with a parameter
    short: str

    if kind == "elementwise" and not op:
        op = _aten_functor_op(targs) or _aten_functor_op(name) or "elementwise"
        kind = _OP_KINDS.get(op, "elementwise")
        if func == "vectorized_elementwise_kernel" and args and args[0].isdigit():
            vector_width = int(args[0])
            variant = "vectorized"
            notes.append(f"vectorized path: contiguous, aligned tensors, {vector_width} elements per access")
        elif func == "unrolled_elementwise_kernel":
            variant = "unrolled"
            notes.append(
                "unrolled path: contiguous tensors"
                + (" with dtype casting (LoadWithCast)" if "WithCast" in name else "")
            )
        elif func.startswith("elementwise_kernel"):
            variant = "strided"
            notes.append("generic strided path: non-contiguous or broadcast inputs (no vector loads)")
        if "AUnaryFunctor" in targs or "BUnaryFunctor" in targs:
            scalar = "a" if "AUnaryFunctor" in targs else "b"
            notes.append(f"one operand is a scalar (A/BUnaryFunctor: {scalar} is a scalar)")
            variant = f"{variant}, scalar {scalar}" if variant else f"scalar {scalar}"
        if "FunctorOnSelf" in targs:
            notes.append("in place on its first operand (OnSelf functor, e.g. add_)")
            variant = f"{variant}, in place" if variant else "in place"
        if op == "clamp":
            notes.append("clamp: also what aten::relu runs on CUDA (clamp_min 0)")
        if op == "threshold":
            notes.append("threshold: what relu's backward (threshold_backward) runs")
        if op == "dropout":
            notes.append("dropout: multiplies by the mask and 1/(1-p)")
        if op == "copy" and "bfloat16_copy" in targs:
            notes.append("copy with a cast to bf16 (autocast / .to(torch.bfloat16))")
        path = (variant or "").split(",")[0]
        suffix = f" ×{vector_width}" if vector_width else (" (strided)" if path == "strided" else "")
        if path == "unrolled":
            suffix = " (unrolled)"
        short = f"{'elementwise' if kind == 'elementwise' else kind} {op}{suffix}"
        if op == kind or op == "elementwise":  # no doubled word: "elementwise ×4", "copy ×8"
            short = f"{kind}{suffix}"
    elif kind == "reduction":
        op = next((rop for pat, rop in _REDUCE_OPS if re.search(pat, targs or name)), "reduce")
        short = f"reduce {op}"
        notes.append(f"TensorIterator reduction: {op}")
    elif kind == "foreach":
        inner = op if op != "foreach" else (_aten_functor_op(targs) or "")
        if "FusedAdamW" in targs or ("FusedAdam" in targs and "ADAMW" in targs):
            inner = "fused adamw"
        elif "FusedAdam" in targs:
            inner = "fused adam"
        elif "FusedSgd" in targs:
            inner = "fused sgd"
        wrapper = next((w for w in _FOREACH_WRAPPERS if re.search(rf"\b{w}\b", targs)), None)
        op = inner or "foreach"
        if wrapper:
            variant = _FOREACH_WRAPPERS[wrapper]
        notes.append(
            "multi-tensor apply: one launch updates a whole list of tensors (_foreach_* ops, optimizers)"
        )
        short = ("foreach" if op == "foreach" else f"foreach {op}") + (f" ({variant})" if variant else "")
    elif kind == "softmax":
        if func.startswith("softmax_warp") and len(args) >= 5:
            if args[4] == "true":
                op = "log_" + op
            if args[3].isdigit():
                notes.append(f"warp-per-row softmax for rows of up to {2 ** int(args[3])} elements")
            if len(args) >= 6 and args[5] == "true":
                variant = "masked"
        short = op.replace(" forward", " fwd").replace(" backward", " bwd")
    elif kind == "rng":
        dist = re.search(r"(normal|uniform|bernoulli|exponential|cauchy|log_normal|geometric|random)", name)
        op = dist.group(1) if dist else ("philox seed unpack" if "philox" in head else func)
        if "philox" in head and "unpack" in head:
            op = "philox seed unpack"
            notes.append("unpacks the RNG seed/offset for a kernel that draws random numbers (dropout)")
        short = f"rng {op}"
    else:
        if not op:
            op = func
        op = _NORM_PARTS.get(func, op) if kind == "norm" else op
        short = op.replace(" forward", " fwd").replace(" backward", " bwd")
        if kind == "other":
            short = collapse_templates(name)
        if kind == "elementwise" and op == "dropout" and len(args) >= 5 and args[4].isdigit():
            vector_width = int(args[4])
            short = f"dropout ×{vector_width}"
    return KernelName(
        name=name,
        family="aten",
        kind=kind,
        op=op,
        dtype=dtype,
        vector_width=vector_width,
        variant=variant,
        short=clip_text(short),
        notes=tuple(notes),
    )


def decode_cub(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
    func = head.rsplit("::", 1)[-1]
    kind = (
        "sort"
        if re.search(r"Sort|Radix", func)
        else "scan"
        if re.search(r"Scan", func)
        else "reduction"
        if re.search(r"Reduce", func)
        else "other"
    )
    return KernelName(
        name=name,
        family="cub",
        kind=kind,
        op=func,
        dtype=cpp_dtype(", ".join(template_args(name))),
        short=clip_text(f"cub {func}"),
        notes=("a CUB device-wide primitive (ATen uses it for sort, unique, nonzero, cumsum, …)",),
    )


def decode_other(name: str) -> KernelName:
    """A name no rule knows: family "other", its readable short form."""
    short = clip_text(collapse_templates(name) or name)
    return KernelName(name=name, family="other", kind="other", short=short)

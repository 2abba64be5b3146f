"""What ``torch.compile`` writes around compiled code: the names of its CPU wrappers and pre-ops.

``TorchDynamo Cache Lookup``, ``Pregraph bytecode`` and ``AOTDispatcher Runtime Wrapper Prologue``
run before the graph; ``Torch-Compiled Region: F/G`` (numbered per frame and graph) wraps it; the
autograd function ``CompiledFunction`` and its backward node ``CompiledFunctionBackward`` wrap the
forward and backward graphs of a training step. One definition for every reader: the summary's
pre-op costs, the dispatch chains (which leave them out) and the tree comparison (which opens them
so their children line up with eager code).
"""

from __future__ import annotations

import polars as pl

from tracetui.trace.text import starts_with

PREOPS = ("TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue")
AUTOGRAD_WRAPPERS = ("CompiledFunction", "CompiledFunctionBackward")
COMPILED_REGION = "Torch-Compiled Region"  # a prefix: "Torch-Compiled Region: 0/0"
WRAPPERS = (*PREOPS, *AUTOGRAD_WRAPPERS)


def is_compile_wrapper(name: str) -> bool:
    """Whether an op name is one of ``torch.compile``'s wrappers or pre-ops."""
    return name in WRAPPERS or name.startswith(COMPILED_REGION)


def compile_wrapper() -> pl.Expr:
    """:func:`is_compile_wrapper` over the ``name`` column."""
    return pl.col("name").is_in(WRAPPERS) | starts_with("name", COMPILED_REGION)

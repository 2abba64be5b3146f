"""Decode a GPU kernel name into what it says: library, kind of work, tile, layout, fused ops, ….

"The name is a hash dump of the kernel's identity": ``nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT``
is a cuBLASLt GEMM for sm90 with a 256×128 output tile, a 64-wide K tile in 4 pipeline stages, a 1×2
cluster, the cooperative schedule and ``TNT`` operand layouts; ``triton_poi_fused__unsafe_view_gelu_mul_0``
is Inductor's pointwise kernel #0 fusing ``_unsafe_view``, ``gelu`` and ``mul``.

The decoder is table-driven: :data:`RULES` (matched against the whole name) and then
:data:`HEAD_RULES` (matched against the qualified function name, so ``void at::native::…<…>(…)`` is
routed by ``at::native::…`` whatever its template arguments mention) are ordered lists of
:class:`Rule` (a family, a regex and a handler); the first rule whose regex matches decodes the name,
and a name no rule matches is family ``"other"`` with a readable short form (templates and parameter
lists collapsed). Adding a family is one entry in one of the two tables. AMD's libraries
(Tensile's ``Cijk_…`` GEMMs of rocBLAS and hipBLASLt, MIOpen, composable kernel) are in
:mod:`~tracetui.insight.kernel_names.rocm`; a ROCm ``.kd`` descriptor symbol decodes as its kernel.
:func:`decode_kernel_name` never raises and is cached per distinct name;
:func:`kernel_name_columns` decodes the unique names of a polars Series into a frame to join back.

Field readings that come from the libraries' naming habits rather than documentation are worded as
readings in :attr:`KernelName.notes` (e.g. ``bz``); nothing here guesses silently.
"""

from tracetui.insight.kernel_names.fields import FAMILIES, KINDS, KernelName, Rule
from tracetui.insight.kernel_names.inductor import split_inductor_ops
from tracetui.insight.kernel_names.rules import (
    HEAD_RULES,
    RULES,
    decode_kernel_name,
    kernel_name_columns,
)

__all__ = [
    "FAMILIES",
    "HEAD_RULES",
    "KINDS",
    "RULES",
    "KernelName",
    "Rule",
    "decode_kernel_name",
    "kernel_name_columns",
    "split_inductor_ops",
]

"""UI-free analysis on top of the trace model: what a kernel name says, what an op costs, what bounds it.

- :mod:`tracetui.insight.kernel_names`: decode a kernel name into family, kind, tile, layout, ….
- :mod:`tracetui.insight.flops`: FLOPs and bytes of an op from its ``Input Dims`` / ``Input type``.
- :mod:`tracetui.insight.devices`: peak compute and memory rates by ``deviceProperties`` name.
- :mod:`tracetui.insight.roofline`: achieved rates, arithmetic intensity and a bound verdict.
- :mod:`tracetui.insight.report`: those joined to the trace model (and the per-GPU-event kernels
  table of ``export`` and the dataset); :mod:`tracetui.insight.summary_data`: the summary's data
  (``summary --json``), read by ``report`` and ``ranks``.

Nothing here imports textual or torch; polars is used only by the ``*_columns`` helpers.
"""

from __future__ import annotations

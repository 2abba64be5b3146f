"""UI-free analysis on top of the trace model: what a kernel name says, what an op costs, what bounds it.

- :mod:`tracetui.insight.kernel_names`: decode a kernel name into family, kind, tile, layout, ….
- :mod:`tracetui.insight.flops`: FLOPs and bytes of an op from its ``Input Dims`` / ``Input type``.
- :mod:`tracetui.insight.devices`: peak compute and memory rates by ``deviceProperties`` name.
- :mod:`tracetui.insight.roofline`: achieved rates, arithmetic intensity and a bound verdict.
- :mod:`tracetui.insight.gpu_work`: the GPU work the readings take, the trace's span and busy time.
- :mod:`tracetui.insight.kernels`: those joined to the trace model per GPU event and per kernel name
  (and the per-GPU-event kernels table of ``export`` and the dataset).
- :mod:`tracetui.insight.spans`: per step and annotation: GPU busy share, a verdict, the threads.
- :mod:`tracetui.insight.compile_names`: ``torch.compile``'s wrappers, and their CPU cost.
- :mod:`tracetui.insight.summary_data`: the summary's data (``summary --json``), read by ``report``
  and ``ranks``.

Nothing here imports textual or torch; polars is used only by the ``*_columns`` helpers.
"""

from __future__ import annotations

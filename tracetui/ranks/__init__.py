"""Many ranks: a distributed run as one thing (UI-free; never imports textual or torch).

* :mod:`~tracetui.ranks.header`, :mod:`~tracetui.ranks.discover` — which files make the run and
  which rank each is (no polars: the CLI probes cheaply);
* :mod:`~tracetui.ranks.tables`, :mod:`~tracetui.ranks.collectives` — one rank's small tables
  (temporal breakdown, collectives, kernels), from its loaded trace;
* :mod:`~tracetui.ranks.engine` — every rank loaded in parallel (processes or Ray), cached;
* :mod:`~tracetui.ranks.analysis` — across ranks: Ranks table, aligned collectives, stragglers;
* :mod:`~tracetui.ranks.dataset` — the run as a Hive-partitioned Parquet dataset;
* :mod:`~tracetui.ranks.run` — from what the user named to a report;
* :mod:`~tracetui.ranks.summary_data` — the data of a run's summary (``summary --json``);
* :mod:`~tracetui.ranks.view` — plain view data for the explorer.
"""

"""The Ray task of ``convert --engine ray``: it runs the driver's own tracetui on the worker.

Ray puts the driver's working folder (and script folder) first on its workers' ``sys.path``: started
from inside a checkout, or from a folder that holds another ``tracetui/``, a worker would import
that one, not the package the driver runs (``cannot import name …``, or silently other code). So
this module is sent by value (its code travels with the task: Ray's cloudpickle,
``register_pickle_by_value``), and the job as bytes: the worker first puts the folder holding the
driver's ``tracetui`` package first on its path, where that folder exists on the worker (on a
cluster with tracetui installed elsewhere, the worker's own is used), and only then imports
tracetui and reads the job. Nothing here imports tracetui at the module's top.
"""

from __future__ import annotations


def run(root: str, job: bytes) -> bytes:
    """Run one pickled :class:`~tracetui.ranks.engine.Job` with the tracetui under ``root``; the
    pickled :class:`~tracetui.ranks.engine.RankResult`."""
    import os
    import pickle
    import sys

    ours = os.path.isfile(os.path.join(root, "tracetui", "__init__.py"))
    if ours and "tracetui" not in sys.modules:  # a worker reused by a later task has it already
        sys.path[:] = [root, *(p for p in sys.path if p != root)]
    from tracetui.ranks.engine import run_job

    return pickle.dumps(run_job(pickle.loads(job)))

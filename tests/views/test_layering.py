"""The view models and the pair tree are UI-free: importing and using them loads neither Textual nor
rich (the layout of docs/architecture.md, checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
import tracetui
from tracetui.compare.pair_tree import PairTree, tree_records
from tracetui.views.insight import load_insight
from tracetui.views.tables import build_tables
from tracetui.views.timeline.area import area
from tracetui.views.timeline.model import timeline_model, window_for
from tracetui.views.tree import TreeModel
from tracetui.views.path_marks import tree_marks
from tracetui.views.why import why_view

trace = tracetui.load(sys.argv[1])
model = TreeModel(trace)
build_tables(trace, load_insight(trace))
timeline = timeline_model(trace)
window = window_for(trace, model.step_ids[0])
for lane in timeline.lanes:
    for row in (*lane.summary, *lane.detail):
        timeline.draw(row, window, 120)
area(trace, window.start_ns, window.end_ns)
tree_records(PairTree(model, model))
why = why_view(trace, model.step_ids[0])
tree_marks(model, why.events.ids)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "rich")))
"""


def test_view_models_never_import_the_ui() -> None:
    fixture = REPO / "tests" / "fixtures" / "mlp_eager.json.gz"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(fixture)], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]", out.stdout

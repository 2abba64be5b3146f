"""The main screen: header, dispatch tree, details pane, timeline strip, find bar, status line."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static

from tracetui import formatting as fmt
from tracetui.app.exporting import (
    SUBTREE_HINT,
    TABLE_HINT,
    Download,
    Exported,
    ask_export,
    shown_columns,
    subtree_title,
    table_title,
    write_export,
)
from tracetui.app.messages import (
    AreaReady,
    DetailsReady,
    FindReady,
    ModelReady,
    Search,
    SelectionReady,
    TablesReady,
    TimelineModelReady,
    TimelineReady,
)
from tracetui.app.screens.tables import TablesScreen
from tracetui.app.screens.why import WhyScreen
from tracetui.app.widgets.details import describe
from tracetui.app.widgets.dispatch_tree import DispatchTree
from tracetui.app.widgets.expect_panel import Checks, ExpectPanel
from tracetui.app.widgets.range_panel import RangePanel
from tracetui.app.widgets.table_view import TableView
from tracetui.app.widgets.timeline import Timeline
from tracetui.app.widgets.trace_header import TraceHeader
from tracetui.errors import TraceError
from tracetui.insight.memory import Memory, memory_of
from tracetui.safetext import shown
from tracetui.trace import Trace
from tracetui.views.insight import Insight, load_insight
from tracetui.views.memory import MemoryLane, memory_lanes, peak_target
from tracetui.views.path_marks import NO_TREE_MARKS, TreeMarks, tree_marks
from tracetui.views.subtree import subtree_frame
from tracetui.views.table_spec import TableSpec
from tracetui.views.tables import build_tables
from tracetui.views.timeline import window as win
from tracetui.views.timeline.area import Area, area
from tracetui.views.timeline.critical import LEGEND, critical_path_overlay
from tracetui.views.timeline.model import (
    NO_MARKS,
    Marks,
    TimelineModel,
    memory_rows,
    timeline_model,
    window_for,
)
from tracetui.views.timeline.window import Window
from tracetui.views.tree import GPU_KINDS, NodeKey, TreeModel, TreeOptions
from tracetui.views.why import PathEvents, WhyView, chosen_step, path_events, paths_overlay, why_view

DETAILS_DELAY = 0.08  # s: the details pane waits for the cursor to rest this long
KEYS_HINT = "? help · / find · e expand chain · g go to op · t tables · k kernels only · p python"
KEYS_HINT_NARROW = "? help · / find · e chain · g op · t tables · k kernels · p python · ^p all"
NARROW = 110  # columns: below, the details go under the tree and the footer is compact


@dataclass(frozen=True)
class PathWalk:
    """Where ``.`` / ``,`` are on a step's critical path: its step's name, the event shown, how many."""

    step: str
    index: int
    count: int
    event_id: int


@dataclass(frozen=True)
class Matches:
    """What ``n`` / ``N`` walk through: a search, its matches in tree order, the one shown (-1: none)."""

    search: Search | None = None
    ids: tuple[int, ...] = ()
    index: int = -1


class ExplorerScreen(Screen[None]):
    """Walk dispatch chains; see what each op launched.

    The tree's model (its filters), the matches of a search and whether a rebuild is running are
    reactive: the status line is computed from them (:meth:`compute_status`), never set by hand.
    """

    view_name = "tree"  # a saved picture's view (tracetui.app.saving)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "slash", "find", "Find", id="explorer.find", tooltip="search op, annotation and kernel names"
        ),
        Binding(
            "n",
            "find_next",
            "Next",
            id="explorer.find_next",
            tooltip="next match (of a find, or of the occurrences chosen in a table)",
        ),
        Binding(
            "N",
            "find_previous",
            "Previous",
            show=False,
            id="explorer.find_previous",
            tooltip="previous match",
        ),
        Binding(
            "k",
            "toggle_kernels_only",
            "GPU only",
            id="explorer.kernels_only",
            tooltip="show only nodes that launched GPU work",
        ),
        Binding(
            "p",
            "toggle_python",
            "Python",
            id="explorer.python",
            tooltip="show or hide python frames (with_stack)",
        ),
        Binding(
            "F",
            "name_filter",
            "Filter",
            show=False,
            id="explorer.name_filter",
            tooltip="show only names containing a text, with their chains",
        ),
        Binding(
            "t",
            "tables",
            "Tables",
            id="explorer.tables",
            tooltip="ops, kernels, annotations, steps, anomalies, orphans, memory",
        ),
        Binding("1", "tables('ops')", "Ops table", show=False, id="explorer.table_ops"),
        Binding("2", "tables('kernels')", "Kernels table", show=False, id="explorer.table_kernels"),
        Binding(
            "3", "tables('annotations')", "Annotations table", show=False, id="explorer.table_annotations"
        ),
        Binding("4", "tables('steps')", "Steps table", show=False, id="explorer.table_steps"),
        Binding("5", "tables('anomalies')", "Anomalies table", show=False, id="explorer.table_anomalies"),
        Binding("6", "tables('orphans')", "Orphans table", show=False, id="explorer.table_orphans"),
        Binding("7", "tables('memory')", "Memory table", show=False, id="explorer.table_memory"),
        Binding(
            "m",
            "memory_peak",
            "Memory peak",
            show=False,
            id="explorer.memory_peak",
            tooltip="go to the op that allocated the biggest block alive at the memory peak",
        ),
        Binding(
            "s",
            "slowest",
            "Slowest calls",
            show=False,
            id="explorer.slowest",
            tooltip="GPU work or a step: go to the slowest call of its name; again (or n): the next slowest",
        ),
        Binding(
            "E",
            "export_subtree",
            "Export subtree",
            show=False,
            id="explorer.export_subtree",
            tooltip="write the cursor's node and everything below it to a .json (.csv, .parquet) file",
        ),
        Binding(
            "v",
            "toggle_timeline",
            "Timeline",
            show=False,
            id="explorer.timeline",
            tooltip="the timeline: full screen (focused), hidden, back under the tree",
        ),
        Binding(
            "z",
            "zoom",
            "Zoom",
            show=False,
            id="explorer.zoom",
            tooltip="zoom the timeline to the node's span; again: back to following the tree's steps",
        ),
        Binding("d", "toggle_details", "Details", show=False, id="explorer.details", tooltip="show or hide"),
        Binding(
            "r",
            "critical_path",
            "Critical path",
            show=False,
            id="explorer.critical_path",
            tooltip="mark the steps' critical paths on the timeline and in the tree (else the annotations'); "
            "again: clear",
        ),
        Binding(
            "y",
            "why",
            "Why",  # e Open chain … k GPU only … y Why … q Quit: the footer's 80 columns, filled
            id="explorer.why",
            tooltip="why the cursor's step is slow: what bounds it, its critical path, the GPU's idle "
            "time, what to try (outside the steps: the slowest step)",
        ),
        Binding(
            "full_stop",
            "walk_path(1)",
            "Next on path",
            show=False,
            id="explorer.path_next",
            tooltip="the next event on the cursor's step's critical path (marked » in the tree)",
        ),
        Binding(
            "comma",
            "walk_path(-1)",
            "Previous on path",
            show=False,
            id="explorer.path_previous",
            tooltip="the previous event on the step's critical path",
        ),
        Binding(
            "x",
            "toggle_expectations",
            "Expectations",
            id="explorer.expectations",
            tooltip="show, focus or hide the pass/fail panel of --expect",
        ),
    ]

    model: var[TreeModel] = var(cast(TreeModel, None), init=False)  # set in __init__
    matches: var[Matches] = var(Matches(), init=False)
    rebuilding: var[bool] = var(False, init=False)
    narrow: var[bool] = var(False, init=False)
    walk: var[PathWalk | None] = var(None, init=False)
    finding: var[bool] = var(False, init=False)  # a step's critical path is being found
    status: var[Content] = var(Content(""))

    def __init__(
        self, trace: Trace, model: TreeModel, *, sample: bool = False, checks: Checks | None = None
    ) -> None:
        super().__init__()
        self.trace = trace
        self.set_reactive(ExplorerScreen.model, model)
        self.sample = sample
        self.checks = checks
        self.tables: dict[str, TableSpec] | None = None
        self.insight = Insight()
        self.memory: Memory | None = None
        self._details_timer: Timer | None = None
        self._window_key: tuple[str, Any] | None = None
        self._zoomed = False
        self._following = True  # the timeline shows the tree cursor's step until the user moves it
        self._step_window: Window | None = None
        self.timeline_model: TimelineModel | None = None
        self._memory_lanes: list[MemoryLane] = []
        self.area: Area | None = None
        self._overlay: tuple[list[int], str] | None = None
        self._pending_table: str | None = None
        self._pending: set[str] = set()
        self._names: list[tuple[str, str, int]] | None = None
        self._paths: dict[int, PathEvents] = {}  # the steps' critical paths found so far
        self._all_paths = False  # r: every step's path is marked
        self._marked = 0  # the marks' generation: r clearing them starts the next

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield TraceHeader(self.trace, sample=self.sample, checks=self.checks)
        with Horizontal(id="main"):
            yield DispatchTree(id="tree")
            with VerticalScroll(id="details-pane"):
                yield Static(Content(""), id="details")
        if self.checks is not None:
            yield ExpectPanel(self.checks, id="expect-panel")
        yield Timeline(id="timeline")
        yield RangePanel(id="range-panel")
        yield Input(placeholder="find an op or kernel name (Enter: go, Esc: cancel)", id="find-input")
        yield Input(placeholder="show only names containing… (empty: no filter)", id="filter-input")
        yield Static(Content(""), id="status")
        yield Footer()

    @property
    def dispatch_tree(self) -> DispatchTree:
        return self.query_one(DispatchTree)

    @property
    def settled(self) -> bool:
        """No debounce timer running and no worker result outstanding (tests and benchmarks wait on it)."""
        return self._details_timer is None and not self._pending

    def on_mount(self) -> None:
        self.query_one("#details-pane").border_title = "details"
        self.dispatch_tree.set_model(self.model, initial=True)
        self.dispatch_tree.focus()
        self._pending.update(("tables", "timeline-model"))
        # After the first frame: the tables' and the timeline's workers would compete with drawing the tree.
        self.call_after_refresh(self.compute_tables)
        self.call_after_refresh(self.load_timeline)

    # ---- details (debounced) ----------------------------------------------------------------------
    @on(DispatchTree.CursorMoved)
    def _cursor_moved(self, event: DispatchTree.CursorMoved) -> None:
        key = event.key
        if self.walk is not None and key != self.walk.event_id:
            self.walk = None  # the cursor left the path's event it walked to
        timeline = self.query_one(Timeline)
        node = None if key is None else self.model.node(key)
        span = (
            None if node is None or node.start_ns is None else (node.start_ns, node.end_ns or node.start_ns)
        )
        timeline.set_highlight(span)
        if key is not None:
            self._follow_window(key)
        self._select(key if isinstance(key, int) else None)
        if self._details_timer is None:
            self._details_timer = self.set_timer(DETAILS_DELAY, self._show_details)
        else:
            self._details_timer.reset()

    def _show_details(self) -> None:
        self._details_timer = None
        key = self.dispatch_tree.cursor_key
        if key is not None:
            self._pending.add("details")
            self.load_details(key, self.model)

    @work(thread=True, exclusive=True, group="details")
    def load_details(self, key: NodeKey, model: TreeModel) -> None:
        content = describe(self.trace, model, key, self.insight, self.memory)
        self.post_message(DetailsReady(key, content))

    def on_details_ready(self, message: DetailsReady) -> None:
        if message.key != self.dispatch_tree.cursor_key:
            return
        self._pending.discard("details")
        self.query_one("#details", Static).update(message.content)
        self.query_one("#details-pane", VerticalScroll).scroll_home(animate=False)

    # ---- timeline -----------------------------------------------------------------------------------
    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @work(thread=True, exclusive=True, group="timeline-model")
    def load_timeline(self) -> None:
        self.post_message(TimelineModelReady(timeline_model(self.trace)))

    def on_timeline_model_ready(self, message: TimelineModelReady) -> None:
        self._pending.discard("timeline-model")
        self.timeline_model = model = message.model
        if self._memory_lanes:
            model.set_lanes("memory", memory_rows(self._memory_lanes))
        self.timeline_ready(model)
        timeline = self.timeline
        timeline.set_model(model)
        if self._step_window is not None and self._following:
            timeline.show_window(self._step_window)
        key = self.dispatch_tree.cursor_key
        self._select(key if isinstance(key, int) else None)
        if self._overlay is not None:
            self.mark_on_timeline(*self._overlay)

    def timeline_ready(self, model: TimelineModel) -> None:
        """The timeline's model is built, before it is shown (override: lanes of a subclass)."""

    def _follow_window(self, key: NodeKey) -> None:
        if not self._following:
            return
        step = self.model.step_of(key)
        wanted = ("step", step)
        if wanted != self._window_key:
            self._window_key = wanted
            self._pending.add("timeline")
            self.load_window(step)

    @work(thread=True, exclusive=True, group="timeline")
    def load_window(self, step: int | None) -> None:
        self.post_message(TimelineReady(window_for(self.trace, step)))

    def on_timeline_ready(self, message: TimelineReady) -> None:
        self._pending.discard("timeline")
        self._step_window = message.window
        if self._following and self.timeline_model is not None:
            self.timeline.show_window(message.window)

    def _select(self, event_id: int | None) -> None:
        """Mark ``event_id`` and what it is linked to on the timeline (in a worker: an op's flows)."""
        if self.timeline_model is None:
            return
        self._pending.add("selection")
        self.load_selection(event_id)

    @work(thread=True, exclusive=True, group="selection")
    def load_selection(self, event_id: int | None) -> None:
        model = self.timeline_model
        assert model is not None
        if event_id is None:
            self.post_message(SelectionReady(None, NO_MARKS, NO_MARKS, 0))
            return
        linked = model.linked(event_id)
        self.post_message(SelectionReady(event_id, model.marks([event_id]), model.marks(linked), len(linked)))

    def on_selection_ready(self, message: SelectionReady) -> None:
        self._pending.discard("selection")
        self.timeline.set_selection(message.event_id, message.selection, message.linked)

    def mark_on_timeline(self, event_ids: Sequence[int], legend: str = "") -> None:
        """Mark ``event_ids`` on their lanes, ``legend`` in the timeline's header: the hook for an
        overlay such as a critical path (any list of event ids; extra lanes go through the model's
        ``set_lanes``). Once the timeline's model is built, in a worker."""
        self._overlay = (list(event_ids), legend)
        if self.timeline_model is not None:
            self._pending.add("overlay")
            self.load_overlay(self._overlay)

    @work(thread=True, exclusive=True, group="overlay")
    def load_overlay(self, overlay: tuple[list[int], str]) -> None:
        assert self.timeline_model is not None
        marks = self.timeline_model.marks(overlay[0])
        self.app.call_from_thread(self._overlay_ready, marks, overlay[1])

    def _overlay_ready(self, marks: Marks, legend: str) -> None:
        self._pending.discard("overlay")
        if self._overlay is not None:  # not cleared meanwhile
            self.timeline.set_marks(marks, legend)

    def action_critical_path(self) -> None:
        """Mark the critical path of every step (else of every annotation call) on the timeline and
        in the tree; again: clear both (a step's path marked by ``y`` or ``.``: every step's)."""
        if self._all_paths:
            self._clear_paths()
            return
        self._all_paths = True
        self._pending.add("critical")
        self.timeline.set_marks(NO_MARKS, f"{LEGEND} …")  # the header says it is being found
        self.load_critical_path(self._marked)

    def _clear_paths(self) -> None:
        self._all_paths = False
        self._overlay = None
        self._paths.clear()
        self._marked += 1  # a path still being found is not marked when it arrives
        self.walk = None
        self.timeline.set_marks(NO_MARKS)
        self.dispatch_tree.set_marks(NO_TREE_MARKS)

    @work(thread=True, exclusive=True, group="critical")
    def load_critical_path(self, marked: int) -> None:
        ids, legend = critical_path_overlay(self.trace)
        marks = tree_marks(self.model, ids)  # its own marks: merged with the tree's on the UI thread
        self.app.call_from_thread(self._critical_path_ready, ids, legend, marks, marked)

    def _critical_path_ready(self, ids: list[int], legend: str, marks: TreeMarks, marked: int) -> None:
        self._pending.discard("critical")
        if not self._all_paths or marked != self._marked:  # cleared meanwhile
            return
        if not ids:
            self._all_paths = False
            self.timeline.set_marks(NO_MARKS)
            self.notify("No steps or annotations: no critical path to mark.", timeout=3)
            return
        self.dispatch_tree.set_marks(self.dispatch_tree.marks | marks)
        self.mark_on_timeline(ids, legend)

    def on_timeline_event_chosen(self, message: Timeline.EventChosen) -> None:
        if not self.dispatch_tree.reveal_event(message.event_id):
            self.notify("That event is hidden by the current filters.", severity="warning", timeout=3)
            self._select(message.event_id)

    def on_timeline_navigated(self, _: Timeline.Navigated) -> None:
        self._following = False
        self._zoomed = False

    def on_timeline_left(self, _: Timeline.Left) -> None:
        if self.has_class("-timeline-full"):
            return
        self.dispatch_tree.focus()

    def on_timeline_range_chosen(self, message: Timeline.RangeChosen) -> None:
        if message.span is None:
            self.area = None
            self.query_one(RangePanel).show_area(None)
            return
        tracks = {
            int(row.lane.key.split(":", 1)[1])
            for row in self.timeline.rows
            if row.lane.kind in ("cpu", "gpu")
        }
        self._pending.add("area")
        self.load_area(message.span, tracks)

    @work(thread=True, exclusive=True, group="area")
    def load_area(self, span: tuple[int, int], tracks: set[int]) -> None:
        self.post_message(AreaReady(area(self.trace, span[0], span[1], tracks)))

    def on_area_ready(self, message: AreaReady) -> None:
        self._pending.discard("area")
        self.area = message.area
        if self.timeline.range is None:  # cleared meanwhile
            return
        found = message.area
        start = (
            ""
            if found is None
            else f"{fmt.offset(found.lo, self.trace.t0_ns)} → {fmt.offset(found.hi, self.trace.t0_ns)}: "
        )
        self.query_one(RangePanel).show_area(found, start)

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        if event.table.id != "range-table":
            return
        event.stop()
        target = event.row.get("first_id")
        if target is not None and not self.dispatch_tree.reveal_event(int(target)):
            self.notify("That event is hidden by the current filters.", severity="warning", timeout=3)
            self._select(int(target))

    def on_range_panel_left(self, _: RangePanel.Left) -> None:
        self.timeline.focus()

    def action_zoom(self) -> None:
        """Timeline: zoom to the selected node's span; again: back to following the tree's steps."""
        node = self.dispatch_tree.cursor_node
        timeline = self.timeline
        if self._zoomed or node is None or node.start_ns is None:
            self._zoomed = False
            self._following = True
            self._window_key = None
            if node is not None:
                self._follow_window(node.key)
            return
        self._zoomed, self._following = True, False
        end = node.end_ns or node.start_ns
        duration = node.cpu_us if node.cpu_us is not None else node.gpu_us  # what its row says
        if self.timeline_model is not None:
            window = win.fit(
                node.start_ns, max(end, node.start_ns + 1), self.timeline_model.bounds, timeline.cells
            )
            timeline.show_window(Window(window.start_ns, window.end_ns, f"zoom: {node.name}", duration))

    def action_toggle_timeline(self) -> None:
        """Under the tree → full screen (focused) → hidden → under the tree."""
        timeline = self.timeline
        if not timeline.display:
            timeline.display = True
        elif self.has_class("-timeline-full"):
            self.remove_class("-timeline-full")
            timeline.display = False
            self.query_one(RangePanel).display = False
            self.dispatch_tree.focus()
        else:
            self.add_class("-timeline-full")
            timeline.focus()
        timeline.set_compact(self.narrow and not self.has_class("-timeline-full"))

    def action_toggle_details(self) -> None:
        pane = self.query_one("#details-pane")
        pane.display = not pane.display

    # ---- expectations ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("find_next", "find_previous") and self.narrow:
            return bool(self.matches.ids)  # narrow: n / N in the footer only while there is something to walk
        return action != "toggle_expectations" or self.checks is not None  # no --expect: no key

    def on_resize(self) -> None:
        """Below 110 columns the footer is compact, without the palette's key (^p still works): its
        keys fit in 80 columns."""
        narrow = self.size.width < NARROW
        footer = self.query_one(Footer)
        footer.compact = narrow
        footer.show_command_palette = not narrow
        if narrow != self.narrow:
            self.narrow = narrow
            self.refresh_bindings()
        self.timeline.set_compact(narrow and not self.has_class("-timeline-full"))

    def action_toggle_expectations(self) -> None:
        """Hidden: show and focus the panel; focused: hide it; shown: focus it."""
        panel = self.query_one(ExpectPanel)
        if not panel.display:
            panel.display = True
            panel.focus()
        elif panel.has_focus:
            panel.display = False
            self.dispatch_tree.focus()
        else:
            panel.focus()

    def on_expect_panel_chosen(self, message: ExpectPanel.Chosen) -> None:
        event_id = message.result.event_id
        if event_id is None:
            self.notify("This check counts the whole trace: there is no one node to go to.", timeout=3)
        elif self.dispatch_tree.reveal_event(event_id):
            self.dispatch_tree.focus()
        else:
            self.notify("That node is hidden by the current filters.", severity="warning", timeout=3)

    def on_expect_panel_left(self, _: ExpectPanel.Left) -> None:
        self.dispatch_tree.focus()

    # ---- filters --------------------------------------------------------------------------------------
    def action_toggle_kernels_only(self) -> None:
        self._rebuild(replace(self.model.options, kernels_only=not self.model.options.kernels_only))

    def action_toggle_python(self) -> None:
        if not self.model.options.hide_python and not self.trace.events["cat"].eq("python_function").any():
            self.notify("This trace has no python frames (profile with with_stack=True).", timeout=3)
            return
        self._rebuild(replace(self.model.options, hide_python=not self.model.options.hide_python))

    def action_name_filter(self) -> None:
        field = self.query_one("#filter-input", Input)
        field.value = self.model.options.name_filter
        field.display = True
        field.focus()

    @on(Input.Submitted, "#filter-input")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._close_input(event.input)
        self._rebuild(replace(self.model.options, name_filter=event.value.strip()))

    def _rebuild(self, options: TreeOptions) -> None:
        self.rebuilding = True
        self._pending.add("model")
        self.build_model(options)

    @work(thread=True, exclusive=True, group="model")
    def build_model(self, options: TreeOptions) -> None:
        self.post_message(ModelReady(TreeModel(self.trace, options)))

    def on_model_ready(self, message: ModelReady) -> None:
        self._pending.discard("model")
        self.model = message.model
        self.rebuilding = False

    def watch_model(self, model: TreeModel) -> None:
        self.dispatch_tree.set_model(model)
        if self.matches.search is not None:
            self.start_find(self.matches.search)

    # ---- find -----------------------------------------------------------------------------------------
    def action_find(self) -> None:
        field = self.query_one("#find-input", Input)
        search = self.matches.search
        field.value = search.query if search is not None and not search.exact else ""
        field.display = True
        field.focus()

    @on(Input.Submitted, "#find-input")
    def _find_submitted(self, event: Input.Submitted) -> None:
        self._close_input(event.input)
        query = event.value.strip()
        if not query:
            self._set_matches(None, [])
            return
        self.start_find(Search(query), jump=True)

    def on_key(self, event: Any) -> None:
        if event.key == "escape" and isinstance(self.focused, Input):
            event.stop()
            self._close_input(self.focused)

    def _close_input(self, field: Input) -> None:
        field.display = False
        self.dispatch_tree.focus()

    def start_find(self, search: Search, *, jump: bool = False) -> None:
        """Search in a worker; ``jump``: then go to the first match."""
        self._pending.add("find")
        self.run_find(search, jump)

    @work(thread=True, exclusive=True, group="find")
    def run_find(self, search: Search, jump: bool) -> None:
        matches = self.model.find(search.query, exact=search.exact, cats=search.cats)
        self.post_message(FindReady(search, matches, jump))

    def on_find_ready(self, message: FindReady) -> None:
        self._pending.discard("find")
        self._set_matches(message.search, message.matches)
        if message.jump:
            if message.matches:
                self._go_to_match(0)
            else:
                self.notify(  # the query may be a trace name: text, never markup
                    f"Nothing named like {shown(repr(message.search.query))} is shown.",
                    severity="warning",
                    timeout=3,
                    markup=False,
                )

    def _set_matches(self, search: Search | None, matches: list[int]) -> None:
        self.matches = Matches(search, tuple(matches))

    def watch_matches(self, old: Matches, new: Matches) -> None:
        if bool(old.ids) != bool(new.ids):
            self.refresh_bindings()
        if new.search != old.search:
            search = new.search
            self.dispatch_tree.find_query = search.query if search is not None and not search.exact else ""

    def _go_to_match(self, index: int) -> None:
        matches = self.matches
        if not matches.ids:
            self.notify("Nothing to go to: / finds a name.", timeout=3)
            return
        count = len(matches.ids)
        for attempt in range(count):
            candidate = (index + attempt) % count if index >= matches.index else (index - attempt) % count
            if self.dispatch_tree.reveal_event(matches.ids[candidate]):
                self.matches = replace(matches, index=candidate)
                return
        self.notify("Every match is hidden by the current filters.", severity="warning", timeout=3)

    def action_find_next(self) -> None:
        self._go_to_match(self.matches.index + 1)

    def action_find_previous(self) -> None:
        index = self.matches.index
        self._go_to_match(index - 1 if index > 0 else len(self.matches.ids) - 1)

    def jump_to_name(self, name: str, kind: str) -> None:
        """Go to the first occurrence of an exact name (the command palette's name search)."""
        self.start_find(Search(name, f"{kind} occurrences", exact=True), jump=True)

    def palette_names(self) -> list[tuple[str, str, int]]:
        """Distinct op, annotation and GPU work names with kind and count (the palette's name search)."""
        if self._names is None:
            self._names = self.model.names().rows()
        return self._names

    # ---- tables -----------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="tables")
    def compute_tables(self) -> None:
        self.model.warm()  # a tree drawn from its kept first frame: the rest before the first keys
        insight = load_insight(self.trace)
        memory = memory_of(self.trace)
        tables = build_tables(self.trace, insight, memory)
        self.post_message(TablesReady(tables, insight, memory, memory_lanes(memory)))
        if self.trace.events.height:  # decode every event's raw args now, not on the first details
            with contextlib.suppress(TraceError):  # not readable: the details pane says so
                self.trace.event_args(int(self.trace.events["id"][0]))

    def on_tables_ready(self, message: TablesReady) -> None:
        self._pending.discard("tables")
        self.tables, self.insight = message.tables, message.insight
        self.memory = message.memory
        self._memory_lanes = message.memory_lanes or []
        if self.timeline_model is not None and self._memory_lanes:
            self.timeline_model.set_lanes("memory", memory_rows(self._memory_lanes))
            self.timeline.lanes_changed()
        self._show_details()  # the roofline and verdicts arrived
        if self._pending_table is not None:
            pending, self._pending_table = self._pending_table, None
            self.action_tables(pending)

    def action_tables(self, tab: str | None = None) -> None:
        """Open the tables (on ``tab``, else where they were left)."""
        if self.tables is None:
            self._pending_table = tab or "ops"
            self.notify("Computing the tables …", timeout=2)
            return
        if not self.app.is_screen_installed("tables"):
            self.app.install_screen(TablesScreen(self.tables, tab or "ops"), "tables")
        screen = self.app.get_screen("tables")
        assert isinstance(screen, TablesScreen)
        if tab is not None and screen.is_mounted and tab != screen.active:
            screen.action_show(tab)
        self.app.push_screen(screen, self._table_row_chosen)

    def _table_row_chosen(self, chosen: tuple[str, dict[str, Any]] | None) -> None:
        if chosen is None or self.tables is None:
            return
        table, row = chosen
        spec = self.tables[table]
        how, target = spec.targets(row)
        if how == "id" and target is None:
            self.notify("No op held this event (an allocator thread, or python code between ops).", timeout=3)
            return
        if how == "id":
            if not self.dispatch_tree.reveal_event(int(target)):
                self.notify("That event is hidden by the current filters.", severity="warning", timeout=3)
            return
        search = Search(str(target), f"{spec.title.lower()} occurrences", exact=True, cats=spec.cats)
        if search == self.matches.search and self.matches.ids:
            self._go_to_match(self.matches.index + 1)
            return
        self._set_matches(search, self.model.find(search.query, exact=True, cats=search.cats))
        self._go_to_match(0)

    # ---- memory ----------------------------------------------------------------------------------------
    def action_memory_peak(self) -> None:
        """Go to the op that reached the memory peak (the peak's op, as summary and check name it)."""
        if self.memory is None:
            self.notify("Reading the memory events …", timeout=2)
            return
        target = peak_target(self.memory)
        if target is None:
            self.notify(
                "No memory events: profile with profile_memory=True (tracetui capture --memory).", timeout=4
            )
            return
        self.notify(target.message, timeout=6, markup=False)
        if target.op_id is not None and not self.dispatch_tree.reveal_event(target.op_id):
            self.notify("The peak's op is hidden by the current filters.", severity="warning", timeout=3)

    # ---- distributions --------------------------------------------------------------------------------
    def action_slowest(self) -> None:
        """Go to the slowest call of the cursor's GPU work name (of the steps, on a step); again: the
        next slowest (the details pane lists them)."""
        node = self.dispatch_tree.cursor_node
        if node is None:
            return
        steps = node.kind == "step"
        row = self.insight.step_distribution() if steps else self.insight.distribution(node.full_name)
        if node.kind not in (*GPU_KINDS, "step") or row is None:
            self.notify("s: on GPU work or a step (once the tables are ready).", timeout=3)
            return
        label = "slowest steps" if steps else "slowest calls"
        search = Search("ProfilerStep" if steps else node.full_name, label, exact=True)
        if search == self.matches.search and self.matches.ids:
            self._go_to_match(self.matches.index + 1)
            return
        self.matches = Matches(search, tuple(row["slowest_ids"]))
        self._go_to_match(0)

    # ---- why: the step's critical path ---------------------------------------------------------------
    def _cursor_step(self) -> int | None:
        key = self.dispatch_tree.cursor_key
        return None if key is None else self.model.step_of(key)

    def action_why(self) -> None:
        """The Why view of the cursor's step (outside the steps: the slowest), found in a worker;
        its path is then marked in the tree (a second y while it is found: nothing more)."""
        if "why" in self._pending:
            return
        self._pending.add("why")
        self.finding = True
        self.load_why(self._cursor_step(), self._marked)

    @work(thread=True, exclusive=True, group="why")
    def load_why(self, step: int | None, marked: int) -> None:
        view = why_view(self.trace, step)
        marks = self._marks_of(view.events)
        self.app.call_from_thread(self._why_ready, view, marks, marked)

    def _marks_of(self, events: PathEvents | None) -> TreeMarks:
        """The marks of ``events`` alone (in a worker: the tree's own are merged on the UI thread)."""
        return NO_TREE_MARKS if events is None else tree_marks(self.model, events.ids)

    def _why_ready(self, view: WhyView, marks: TreeMarks, marked: int) -> None:
        self._pending.discard("why")
        self.finding = False
        self._path_found(view.events, marks, marked)
        self.app.push_screen(WhyScreen(view), self._why_chosen)

    def _path_found(self, events: PathEvents | None, marks: TreeMarks, marked: int) -> None:
        """A step's path is found: marked in the tree and, unless every step's is, on the timeline
        (unless the marks were cleared since it was asked for)."""
        if events is None or marked != self._marked:
            return
        self._paths[events.step_id] = events
        if marks:
            self.dispatch_tree.set_marks(self.dispatch_tree.marks | marks)
        if not self._all_paths:
            self.mark_on_timeline(*paths_overlay(self._paths.values()))

    def _why_chosen(self, event_id: int | None) -> None:
        if event_id is not None and not self.dispatch_tree.reveal_event(event_id):
            self.notify("That event is hidden by the current filters.", severity="warning", timeout=3)

    def action_walk_path(self, delta: int) -> None:
        """To the next (``delta`` 1) or previous (-1) event on the cursor's step's critical path
        (outside the steps: the slowest step's), expanding what holds it; the path is found first
        (in a worker) and marked in the tree."""
        step = self._cursor_step()
        events = self._paths.get(step) if step is not None else None
        if events is not None:
            self._walk(events, delta)
            return
        if "path" in self._pending:
            return  # the path is being found: the walk starts when it is
        self._pending.add("path")
        self.finding = True
        self.load_path(step, delta, self._marked)

    @work(thread=True, exclusive=True, group="path")
    def load_path(self, step: int | None, delta: int, marked: int) -> None:
        chosen, _ = chosen_step(self.trace, step)
        events = None if chosen is None else self._paths.get(chosen) or path_events(self.trace, chosen)
        marks = self._marks_of(events)
        self.app.call_from_thread(self._path_ready, events, marks, delta, marked)

    def _path_ready(self, events: PathEvents | None, marks: TreeMarks, delta: int, marked: int) -> None:
        self._pending.discard("path")
        self.finding = False
        if events is None:
            self.notify("No steps: no critical path to walk (y says why).", timeout=3)
            return
        self._path_found(events, marks, marked)
        self._walk(events, delta)

    def _walk(self, events: PathEvents, delta: int) -> None:
        """Put the cursor on the path's event after (before) the cursor; skip hidden ones."""
        node = self.dispatch_tree.cursor_node
        key = node.event_id if node is not None else None
        start = node.start_ns if node is not None else None
        index = events.after(key, start) if delta > 0 else events.before(key, start)
        if index is None:
            self.notify("Nothing on this step's critical path.", timeout=3)
            return
        count = len(events.ids)
        for attempt in range(count):
            candidate = (index + attempt * delta) % count
            if self.dispatch_tree.reveal_event(events.ids[candidate]):
                self.walk = PathWalk(events.name, candidate, count, events.ids[candidate])
                return
        self.notify(
            "Every event on the path is hidden by the current filters.", severity="warning", timeout=3
        )

    # ---- export ------------------------------------------------------------------------------------------
    def action_export_subtree(self) -> None:
        """Ask for a file name, then write the cursor's subtree (as the tree shows it) in a worker."""
        focused = self.focused
        if (
            self.area is not None
            and focused is not None
            and (focused is self.timeline or focused.id == "range-table")
        ):
            self._export_range()
            return
        node = self.dispatch_tree.cursor_node
        if node is None:
            return
        title = subtree_title(node.full_name)

        def write(target: Path | Download, overwrite: bool) -> None:
            self._pending.add("export")
            self.export_subtree(node.key, self.model, target, overwrite)

        ask_export(self.app, title, self.trace.path, node.name, ".json", SUBTREE_HINT, write)

    def _export_range(self) -> None:
        """The Range table as the panel shows it (its sort), through the tables' export."""
        table = self.query_one(RangePanel).table
        sort = next((c.title for c in table.columns if c.key == table.sort_key), None)
        title = table_title("Range", table.row_count, sort, table.sort_descending)
        ask_export(self.app, title, self.trace.path, "range", ".csv", TABLE_HINT, self._export_range_to)

    def _export_range_to(self, target: Path | Download, replace: bool) -> None:
        table = self.query_one(RangePanel).table
        frame = shown_columns(table.frame, table.columns)
        try:
            message = write_export(frame, target, self.trace.path, "the Range table", replace=replace)
        except TraceError as exc:
            self.notify(str(exc), title="Not exported", severity="error", markup=False)
        else:
            self.notify(message.deliver(self.app), title="Exported", markup=False)

    @work(thread=True, exclusive=True, group="export")
    def export_subtree(
        self, key: NodeKey, model: TreeModel, target: Path | Download, overwrite: bool
    ) -> None:
        frame, truncated = subtree_frame(model, key, self.trace.t0_ns)
        what = "the subtree" + (" (cut at its first rows: too big)" if truncated else "")
        try:
            exported, failed = write_export(frame, target, self.trace.path, what, replace=overwrite), False
        except TraceError as exc:
            exported, failed = Exported(str(exc)), True
        self.app.call_from_thread(self._exported, exported, failed)

    def _exported(self, exported: Exported, failed: bool) -> None:
        self._pending.discard("export")
        title, severity = ("Not exported", "error") if failed else ("Exported", "information")
        message = exported.deliver(self.app)  # a download is sent from here, the app's thread
        self.notify(message, title=title, severity=severity, markup=False)  # type: ignore[arg-type]

    # ---- status --------------------------------------------------------------------------------------
    def compute_status(self) -> Content:
        """The status line: a running rebuild, else the filters and the search with its position."""
        if self.rebuilding:
            return Content.styled(" applying filters …", "$text-muted")
        if self.finding:
            return Content.styled(" finding the step's critical path …", "$text-muted")
        parts: list[str | tuple[str, str]] = []
        filters = self.model.options.describe()
        if filters:
            parts += [("filters: ", "$text-muted"), (shown(", ".join(filters)), "$text-warning"), "   "]
        matches = self.matches
        if matches.search is not None:
            count = len(matches.ids)
            position = f"{matches.index + 1}/{count}" if matches.index >= 0 else f"{count} found"
            parts += [
                (f"{shown(matches.search.label)}: ", "$text-muted"),
                shown(matches.search.query),
                (f"  {position}", "bold"),
            ]
            parts += [("   n / N: next / previous", "$text-muted")]
        walk = self.walk
        if walk is not None:
            parts += [
                ("   " if parts else "", ""),
                ("critical path of ", "$text-muted"),
                shown(walk.step),
                (f"  {walk.index + 1}/{walk.count}", "bold"),
                ("   . / ,: next / previous", "$text-muted"),
            ]
        hint = KEYS_HINT_NARROW if self.narrow else KEYS_HINT
        return Content.assemble(" ", *(parts or [(hint, "$text-muted")]))

    def watch_status(self, status: Content) -> None:
        self.query_one("#status", Static).update(status)

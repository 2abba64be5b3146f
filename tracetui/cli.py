"""The ``tracetui`` command line: a thin layer over the trace model, the app and capture.

Each subcommand is a module of :mod:`tracetui.commands`, imported only when it runs (the CLI's
one lazy seam), so ``tracetui capture`` works on a machine with torch but without polars or
textual, and ``tracetui --help`` starts instantly.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any

import click

from tracetui import __version__, settings
from tracetui.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    TraceError,
    failure,
    unexpected,
)
from tracetui.output import StdoutClosed, guard_stdout
from tracetui.report.names import TABLES  # constants only: no heavy import
from tracetui.safetext import shown
from tracetui.trace.allocator import hand_back_at_once

# command name -> "module:attribute" of its click.Command (the order of --help)
COMMANDS: dict[str, str] = {
    name: f"tracetui.commands.{name}:{name}_command"
    for name in ("open", "summary", "export", "capture", "diff", "check", "convert", "serve", "render")
}

EPILOG = """\b
Exit codes:
  0  success
  1  `tracetui check`: at least one expectation failed
  2  bad input: usage error, unreadable or invalid trace, bad expectations file,
     out of memory
  3  internal error (a bug in tracetui; TRACETUI_DEBUG=1 shows the traceback)
"""


class SettingType(click.ParamType):  # type: ignore[type-arg]
    """An option read as its setting is (:mod:`tracetui.settings`): the same type, the same errors."""

    def __init__(self, setting: settings.Setting[Any]) -> None:
        self.setting = setting
        self.name = setting.kind.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.setting.kind.read(value.strip())
        except ValueError:
            self.fail(f"{value}: {self.setting.kind.expected}", param, ctx)


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command), target
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help without importing every command module.
        rows = [(name, SHORT_HELP[name]) for name in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


SHORT_HELP = {
    "open": "Explore a trace, or the ranks of a run, in the terminal (default: the bundled sample).",
    "summary": "Print a one-screen report of a trace, or of a run's ranks (or --json).",
    "export": f"Write a table ({', '.join(TABLES)}; a run's too) as csv, parquet or json.",
    "capture": "Profile a built-in workload and write a trace.",
    "diff": "Compare two traces (or two ranks of a run): kernels, dispatch chains, time.",
    "check": "Check a trace against an expectations file (exit 1 on failure).",
    "convert": "Write the ranks of a distributed run as a Parquet dataset (local or Ray).",
    "serve": "Explore a trace in a web browser (textual-serve; localhost by default).",
    "render": "Save a view of the explorer (tree, timeline, tables, why) as an SVG picture.",
}


def show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the version, and which decoder reads traces here (a slow install shows)."""
    if not value or ctx.resilient_parsing:
        return
    from tracetui.trace.native import status

    click.echo(f"tracetui, version {__version__}\ntrace reader: {status()}")
    ctx.exit()


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=show_version,
    help="Show the version and the trace reader, and exit.",
)
@click.option(
    "--max-inflate",
    type=SettingType(settings.MAX_INFLATE),
    default=None,
    metavar="RATIO",
    help="Refuse gzip data that inflates to more than 256 MB plus RATIO times its size (default 100; "
    "0: no cap; also TRACETUI_MAX_INFLATE).",
)
def cli(max_inflate: float | None) -> None:
    """tracetui: a terminal explorer for PyTorch profiler traces.

    Which CPU op launched which GPU kernel, which ops launched none, and where the
    time went. Guess first, then look.
    """
    # --max-inflate is read by each command (tracetui.commands.max_inflate) and handed to its loads


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every error the user can cause is one line on stderr."""
    args = sys.argv[1:] if argv is None else argv
    # polars' allocator (jemalloc) hands freed memory back to the system at once rather than
    # ~0.5 s later, until a load sets a budget to keep it under (tracetui.trace.allocator)
    hand_back_at_once()
    guard_stdout()
    debug = False
    try:
        debug = bool(settings.DEBUG.get())
        code = cli.main(args=args, prog_name="tracetui", standalone_mode=False)
    except TraceError as exc:
        _say(f"tracetui: {exc}")
        code = EXIT_BAD_INPUT
    except click.exceptions.Abort:
        _say("tracetui: interrupted")
        code = 130
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "tracetui"
        _say(f"{where}: {shown(exc.format_message())} (see --help)")
        code = EXIT_BAD_INPUT if exc.exit_code == EXIT_CHECK_FAILED else exc.exit_code  # 1: check only
    except KeyboardInterrupt:
        _say("tracetui: interrupted")
        code = 130
    except (StdoutClosed, BrokenPipeError):  # the reader has what it wanted (`| head`)
        code = EXIT_OK
    except BaseException as exc:  # a bug, or out of memory: still one line unless debugging
        if not isinstance(exc, unexpected()) or debug:
            raise  # SystemExit, GeneratorExit
        problem, code = failure(exc)  # a polars panic is not an Exception: caught here too
        _say(
            f"tracetui: {problem}"
            + (" (TRACETUI_DEBUG=1 shows the traceback)" if code == EXIT_INTERNAL else "")
        )
    _exit(code if isinstance(code, int) else 0)


def _say(line: str) -> None:
    """One line on stderr (nothing if stderr itself cannot be written)."""
    with contextlib.suppress(OSError, ValueError):
        click.echo(line, err=True)


def _exit(code: int) -> None:
    """Flush and leave without tearing down the interpreter.

    A loaded trace is millions of small objects; freeing them one by one at exit costs a
    noticeable fraction of a second and serves no purpose. A cache entry being written is
    finished first (``os._exit`` does not wait for threads), and worker processes a run's command
    started but did not use (it failed before) are stopped.
    """
    workers = sys.modules.get("tracetui.ranks.workers")
    if workers is not None:
        workers.before_exit()
    cache = sys.modules.get("tracetui.trace.cache")
    if cache is not None:
        cache.settle()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a failing stdout was reported already
            stream.flush()
    os._exit(code)

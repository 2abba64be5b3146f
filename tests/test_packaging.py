"""The package as it installs: every package listed, the mapped folders under ``tracetui``, the pins.

``workloads/`` and ``sample_traces/`` are top-level folders of the repository but install as
``tracetui.workloads`` and ``tracetui.sample_traces`` (pyproject's ``package-dir``); from the
repository root the bare names would still import, so these tests look at the source and at a
fresh interpreter outside the repository. CI (``.ci/run``) also installs the built wheel.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the tomli backport (a dependency there)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
MAPPED = {"workloads", "sample_traces"}
# .ci/installed runs the tests against an installed tracetui, beside no package folders.
needs_source = pytest.mark.skipif(
    not (REPO / "tracetui").is_dir(), reason="no source tree here: the tests run against an install"
)


def _packages_in(folder: Path, name: str) -> set[str]:
    """Dotted names of ``folder`` and every folder below it that holds Python files."""
    return {
        ".".join([name, *d.relative_to(folder).parts])
        for d in [folder, *folder.rglob("*")]
        if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))
    }


@needs_source
def test_the_package_list_names_every_package_of_the_tree() -> None:
    tree = _packages_in(REPO / "tracetui", "tracetui")
    for name, folder in SETUPTOOLS["package-dir"].items():
        tree |= _packages_in(REPO / folder, name)
    listed = set(SETUPTOOLS["packages"])
    assert not tree - listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(tree - listed)}"
    assert not listed - tree, f"listed but not in the tree: {sorted(listed - tree)}"
    assert {SETUPTOOLS["package-dir"][f"tracetui.{m}"] for m in MAPPED} == MAPPED


def _python_files() -> list[Path]:
    folders = ("tracetui", "workloads", "sample_traces", "tests", "benchmarks")
    return [p for folder in folders for p in (REPO / folder).rglob("*.py")]


@needs_source
def test_nothing_imports_the_mapped_folders_by_their_repository_name() -> None:
    wrong = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            wrong += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names if n.split(".")[0] in MAPPED]
    docs = [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("*/README.md"), *REPO.glob("*/*.sh")]
    for path in docs:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"python3? -m (workloads|sample_traces)\b", line):
                wrong.append(f"{path.relative_to(REPO)}:{number}")
    assert not wrong, "import these as tracetui.workloads / tracetui.sample_traces: " + ", ".join(wrong)


def test_the_installed_package_holds_the_mapped_folders_and_nothing_generic(tmp_path: Path) -> None:
    code = (
        "import importlib.util as u, tracetui.workloads.registry as r, tracetui.sample_traces as s\n"
        "print('mlp' in r.WORKLOADS, s.default_trace().is_file(), u.find_spec('workloads'),"
        " u.find_spec('sample_traces'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True", "None", "None"]


def _pins() -> dict[str, str]:
    lines = (REPO / "tests" / "constraints.txt").read_text().splitlines()
    pins = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    return {req.name: str(req.specifier).removeprefix("==") for req in pins}


def test_the_constraints_pin_the_ui_stack_and_the_test_tools_within_the_runtime_ranges() -> None:
    pins = _pins()
    runtime = {Requirement(r).name: Requirement(r) for r in PYPROJECT["project"]["dependencies"]}
    test = [Requirement(r).name for r in PYPROJECT["project"]["optional-dependencies"]["test"]]
    assert set(test) | {"textual", "rich"} <= set(pins)
    for name in ("textual", "rich"):
        assert runtime[name].specifier.contains(pins[name]), name
        assert version(name) == pins[name], f"{name}: install with -c tests/constraints.txt (README)"


@needs_source
def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (REPO / "README.md").read_text()
    found = re.search(r"^\$ (pip install torch\S* .* && pytest)\s+#", readme, re.MULTILINE)
    assert found, "README's test command"
    assert found.group(1) in (REPO / ".ci" / "run").read_text()

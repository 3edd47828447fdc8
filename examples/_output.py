"""Where the examples write their files (not an example itself).

By default into ``examples/out/`` (git-ignored), whatever the current directory;
a path given on an example's command line is used as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"


def default_output(name: str) -> str:
    """``examples/out/NAME``: relative to the current directory when below it (as
    printed from the repository root), absolute otherwise."""
    path = OUT / name
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def ready(path: str) -> str:
    """Create the folder ``path`` goes into, if missing; return ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no window), or None
    when matplotlib is not installed (the example then says it skipped the plot)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipped the plot")
        return None
    return plt

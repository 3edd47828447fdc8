"""The code stays lint-clean and the public API type-checks (when the tools are installed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the modules whose signatures users program against
TYPED = [
    "tapegrad/__init__.py", "tapegrad/core",
    "tapegrad/pytree.py", "tapegrad/backend.py", "tapegrad/testing.py", "tapegrad/debug.py",
    "tapegrad/optimizers.py", "tapegrad/flatten.py", "tapegrad/scipy/stats.py",
    "tapegrad/transforms", "tapegrad/torch",
]


def test_ruff_is_clean() -> None:
    pytest.importorskip("ruff")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "tapegrad", "tests", "examples", "benchmarks"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_passes_on_the_public_api() -> None:
    pytest.importorskip("mypy")
    out = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
                          "--no-error-summary", *TYPED], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_package_ships_py_typed() -> None:
    assert os.path.exists(os.path.join(ROOT, "tapegrad", "py.typed"))

"""Smoke tests: every example runs with --small, and the docs pages' samples print what they show
(the site build with --strict: tests/test_docs.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def listing(folder: Path) -> set[Path]:
    return set(folder.rglob("*")) if folder.exists() else set()


def run_example(name: str, cwd: Path, *args: str, timeout: float = 60, path_first: Path | None = None,
                examples: Path = EXAMPLES) -> str:
    """Run NAME.py --small from the folder ``examples`` in ``cwd``; return its stdout (fail
    on a non-zero exit, or if it wrote into the repository's root or examples/out/).
    ``path_first``: a directory put ahead of everything on ``PYTHONPATH``."""
    before = set(ROOT.iterdir()), listing(EXAMPLES / "out")
    env = dict(os.environ)
    first = [str(path_first)] if path_first is not None else []
    env["PYTHONPATH"] = os.pathsep.join([*first, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, str(examples / f"{name}.py"), *args, "--small"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert (set(ROOT.iterdir()), listing(EXAMPLES / "out")) == before, f"{name} wrote into the repository"
    return proc.stdout


def copy_examples(dest: Path, *names: str) -> Path:
    """Copy the examples NAMES (and the helper that places their files) to DEST/examples,
    so that their default outputs land in DEST/examples/out/, not the repository's."""
    folder = dest / "examples"
    folder.mkdir(parents=True)
    for name in (*names, "_output"):
        shutil.copy(EXAMPLES / f"{name}.py", folder)
    return folder


def test_quickstart(tmp_path):
    out = run_example("quickstart", tmp_path)
    assert "tanh''''(0.3)" in out and "accuracy" in out


def test_higher_derivatives(tmp_path):
    pytest.importorskip("matplotlib")
    out = run_example("higher_derivatives", tmp_path, "derivs.png")
    assert "d^5 tanh / dx^5 at 0 = +16.000000" in out
    png = tmp_path / "derivs.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_higher_derivatives_default_output(tmp_path):
    """By default the plot goes to examples/out/ (created), named relative to the
    current directory when that is the repository root."""
    pytest.importorskip("matplotlib")
    out = run_example("higher_derivatives", tmp_path, examples=copy_examples(tmp_path, "higher_derivatives"))
    assert f"wrote {Path('examples', 'out', 'tanh_derivatives.png')}" in out
    assert is_png(tmp_path / "examples" / "out" / "tanh_derivatives.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples"]


def test_newton_rosenbrock_reaches_minimum(tmp_path):
    out = run_example("newton_rosenbrock", tmp_path)
    m = re.search(r"final point \(([-\d.e+]+), ([-\d.e+]+)\)", out)
    assert m, out
    x, y = float(m.group(1)), float(m.group(2))
    assert abs(x - 1) < 1e-6 and abs(y - 1) < 1e-6
    losses = [float(v) for v in re.findall(r"loss = ([\d.e+-]+)", out)]
    assert losses[-1] < 1e-12 and losses[-1] < losses[0]


def test_meta_gradient_matches_finite_differences(tmp_path):
    out = run_example("meta_gradient", tmp_path)
    assert "meta-gradient matches finite differences" in out
    pairs = re.findall(r"tapegrad\s+(\S+)\s+finite diff\s+(\S+)", out)
    assert len(pairs) >= 2
    for got, fd in pairs:
        assert abs(float(got) - float(fd)) <= 1e-8 + 1e-5 * abs(float(fd))
    assert "d meta_loss / d log_lr" in out  # the inner learning rate is differentiated too


def test_logistic_regression_numpy(tmp_path):
    out = run_example("logistic_regression_numpy", tmp_path)
    assert "matches the closed form" in out
    acc = float(re.search(r"test accuracy ([\d.]+)%", out).group(1))
    assert acc > 80


def test_tape_graphviz(tmp_path):
    out = run_example("tape_graphviz", tmp_path, "mytape")
    assert "= matmul(%0, %1)" in out and "= sum(" in out
    dot = (tmp_path / "mytape.dot").read_text()
    assert dot.startswith("digraph tape {") and "->" in dot
    if "skipped" in out:
        assert not (tmp_path / "mytape.png").exists()
    else:
        assert (tmp_path / "mytape.png").exists()


def test_tape_graphviz_default_output(tmp_path):
    work = tmp_path / "work"  # run from another folder: the files still go to examples/out/
    work.mkdir()
    folder = copy_examples(tmp_path, "tape_graphviz")
    out = run_example("tape_graphviz", work, examples=folder)
    assert f"wrote {folder / 'out' / 'tape.dot'}" in out
    assert (folder / "out" / "tape.dot").read_text().startswith("digraph tape {")
    assert not list(work.iterdir())


def test_examples_that_write_files_default_to_examples_out():
    """Every example that saves a file takes its default path from _output.default_output
    (examples/out/), and creates the folder it writes into with _output.ready."""
    writers = [p for p in EXAMPLES.glob("*.py")
               if p.name != "_output.py" and re.search(r"savefig\(|open\([^)]*[\"']w", p.read_text())]
    assert {p.stem for p in writers} >= {"higher_derivatives", "tape_graphviz", "gaussian_process", "bbvi", "ode_fit"}
    for path in writers:
        text = path.read_text()
        assert "default=default_output(" in text, f"{path.name}: its default output is not under examples/out/"
        assert "ready(" in text, f"{path.name}: does not create the folder it writes into"


def test_train_digits_jit(tmp_path):
    """``--jit`` compiles the functional step (value_and_grad + tg.optimizers.adam) and
    trains as well as the eager functional style, to float32 rounding."""
    pytest.importorskip("sklearn")
    out = run_example("train_digits", tmp_path, "--jit")
    m = re.search(r"held-out accuracy: ([\d.]+)% \(functional, jit\)", out)
    assert m, out
    assert float(m.group(1)) > 80.0
    sys.path.insert(0, str(EXAMPLES))
    try:
        import train_digits
    finally:
        sys.path.pop(0)
    acc_e, _, hist_e = train_digits.train("functional", epochs=2, seed=3, quiet=True)
    acc_j, _, hist_j = train_digits.train("functional", epochs=2, seed=3, quiet=True, jit=True)
    assert abs(acc_e - acc_j) <= 0.01
    for a, b in zip(hist_e, hist_j):
        assert abs(a - b) <= 1e-4 * abs(a)


def test_per_sample_grads_match_the_loop(tmp_path):
    pytest.importorskip("sklearn")
    out = run_example("per_sample_grads", tmp_path)
    assert "vmap(grad) matches the loop of autograd.grad calls within 1e-06" in out
    assert "their mean is the gradient of the batch loss" in out
    diffs = [float(d) for d in re.findall(r"max \|vmap - loop\| = (\S+)", out)]
    assert len(diffs) == 4 and max(diffs) <= 1e-6


def test_model_ensembling_matches_the_loop(tmp_path):
    pytest.importorskip("sklearn")
    out = run_example("model_ensembling", tmp_path)
    assert out.count(": matches the loop") == 2
    assert "matches the same member trained alone" in out
    acc = float(re.search(r"ensemble ([\d.]+)%", out).group(1))
    assert acc > 80


def test_cnn_digits_trains_through_a_dataloader(tmp_path):
    """The CNN example (``import tapegrad.torch as torch``) prints PyTorch-style epochs and learns."""
    pytest.importorskip("sklearn")
    out = run_example("cnn_digits", tmp_path)
    assert out.startswith("tapegrad.torch: 512 training images, 360 held out")
    epochs = re.findall(r"epoch +(\d+) +train loss ([\d.]+) +test loss [\d.]+ +test accuracy ([\d.]+)%", out)
    assert [int(e) for e, _, _ in epochs] == [1, 2]
    assert float(epochs[1][1]) < float(epochs[0][1])
    acc = float(re.search(r"held-out accuracy: ([\d.]+)%", out).group(1))
    assert acc > 80


def is_png(path: Path) -> bool:
    return path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gaussian_process_raises_the_likelihood(tmp_path):
    pytest.importorskip("matplotlib")
    out = run_example("gaussian_process", tmp_path, "--out", str(tmp_path / "gp.png"))
    assert "gradient matches finite differences" in out and "the log marginal likelihood went up" in out
    before, after = (float(v) for v in re.search(r"log marginal likelihood: (\S+) -> (\S+)", out).groups())
    assert after > before + 10
    learned = dict(re.findall(r"learned (\w+)\s+= (\S+)", out))
    assert set(learned) == {"length_scale", "signal_var", "noise_var"}
    assert 0.5 < float(learned["length_scale"]) < 2.0  # the data's wiggles are about 1 wide
    assert 0.001 < float(learned["noise_var"]) < 0.05  # the noise sd is 0.1
    assert is_png(tmp_path / "gp.png")


def test_gaussian_process_default_output_and_no_matplotlib(tmp_path):
    """Without matplotlib the example still fits and says it skipped the plot (and
    writes nothing); with it, the plot goes to examples/out/ by default."""
    blocker = tmp_path / "blocker"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text("raise ImportError('blocked for the test')\n")
    work = tmp_path / "work"
    work.mkdir()
    folder = copy_examples(tmp_path, "gaussian_process")
    out = run_example("gaussian_process", work, path_first=blocker, examples=folder)
    assert "the log marginal likelihood went up" in out and "skipped the plot" in out
    assert not list(work.iterdir()) and not (folder / "out").exists()
    if importlib.util.find_spec("matplotlib") is not None:
        run_example("gaussian_process", work, examples=folder)
        assert is_png(folder / "out" / "gaussian_process.png")
        assert not list(work.iterdir())


def test_bbvi_raises_the_elbo(tmp_path):
    pytest.importorskip("matplotlib")
    out = run_example("bbvi", tmp_path, "--out", str(tmp_path / "vi.png"))
    assert "the ELBO went up" in out and "stays below log Z = 0" in out
    before, after = (float(v) for v in re.search(r"ELBO \(4000 fixed samples\): (\S+) -> (\S+)", out).groups())
    assert before < -5 and -2 < after < 0
    assert is_png(tmp_path / "vi.png")


def test_ode_fit_recovers_the_parameters(tmp_path):
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    out = run_example("ode_fit", tmp_path, "--out", str(tmp_path / "ode.png"))
    assert "adjoint gradient matches finite differences" in out
    got = {name: (float(r), float(t)) for name, r, t in re.findall(r"(\w): recovered (\S+), true ([\d.]+)", out)}
    assert set(got) == {"k", "c"}
    for recovered, true in got.values():
        assert abs(recovered - true) < 0.1 * true + 0.05
    assert is_png(tmp_path / "ode.png")


def test_examples_have_docstrings():
    for path in EXAMPLES.glob("*.py"):  # (_output.py too, which says it is not an example)
        text = path.read_text()
        assert text.lstrip().startswith('"""'), f"{path.name} has no module docstring"


DOC_PAGES = ["index.md", "tutorial.md", "coming-from.md", "extending.md", "architecture.md", "jit.md"]


@pytest.mark.parametrize("page", DOC_PAGES)
def test_docs_samples_print_what_they_show(page):
    """The ``pycon`` samples of each page run as doctests (one namespace per page);
    ``...`` in a shown output stands for an address or the rest of a long message."""
    import doctest
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tutorial reads a non-leaf .grad on purpose
        result = doctest.testfile(
            str(ROOT / "docs" / page), module_relative=False, verbose=False, report=True,
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        )
    assert result.attempted > 0, f"no samples found in docs/{page}"
    assert result.failed == 0, f"{result.failed} sample(s) in docs/{page} print something else"

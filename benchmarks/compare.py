"""Two checkouts of tapegrad timed side by side by benchmarks/run.py, interleaved.

    python3 benchmarks/compare.py OLD NEW --only a,b,c,f,i --rounds 5 [--quick]

OLD and NEW are the roots of two checkouts (``git worktree add /tmp/old
<commit>``). Each round runs this directory's run.py once per checkout, each
in a new process, the order flipping every round (OLD NEW / NEW OLD ...), so
that load on the machine hits both alike. The same benchmark code times
both: run.py imports the checkout's tapegrad (``TAPEGRAD_BENCH_ROOT``), so
OLD needs no run.py of its own. Per row it prints, for each checkout, the
median tapegrad figure and ratio (to NumPy, or to PyTorch for j/k) with their
ranges over the rounds, and the paired NEW / OLD quotient of the figures
(median and range), which is the number to hold to "within 3%".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve().parent / "run.py"


def run_once(root: str, only: str, quick: bool) -> dict[str, Any]:
    """One run of run.py on checkout ``root``: its rows, keyed by their case,
    label and how many rows of that case and label came before (labels
    repeat: "the same, jit")."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(RUNNER), "--only", only, "--no-peers", "--json", str(out)]
        if quick:
            cmd.append("--quick")
        env = dict(os.environ, TAPEGRAD_BENCH_ROOT=root)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"run.py failed on {root}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        data = json.loads(out.read_text())
    if not data["tapegrad"].startswith(str(Path(root).resolve())):
        raise SystemExit(f"run.py imported {data['tapegrad']}, not the checkout at {root}")
    keyed: dict[Any, Any] = {}
    for r in data["rows"]:  # (the k-th row of a label: a checkout with rows the other lacks lines up)
        k = sum(1 for key in keyed if key[1:] == (r["case"], r["label"]))
        keyed[(k, r["case"], r["label"])] = r
    return keyed


def spread(values: list[float], fmt: str) -> str:
    """``median (min-max)`` of ``values``."""
    if not values:
        return "-"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="root of the reference checkout")
    parser.add_argument("new", help="root of the checkout compared with it")
    parser.add_argument("--only", default="a,b,c,f,i", metavar="a,b,...", help="run.py's cases (default a,b,c,f,i)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each checkout (default 5)")
    parser.add_argument("--quick", action="store_true", help="run.py --quick (smoke test: figures are rough)")
    args = parser.parse_args(argv)
    roots = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for which in ("old", "new") if r % 2 == 0 else ("new", "old"):
            runs[which].append(run_once(roots[which], args.only, args.quick))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    print(f"old: {roots['old']}\nnew: {roots['new']}\n{args.rounds} rounds, interleaved; "
          "figure = tapegrad's median in the row's unit; new/old paired per round\n")
    header = ["row", "unit", "old figure", "old ratio", "new figure", "new ratio", "new/old"]
    lines = [header]
    for key, row in runs["new"][0].items():
        def col(which: str, field: str) -> list[float]:
            return [run[key][field] for run in runs[which] if key in run and run[key][field] is not None]

        paired = [n[key]["tapegrad"] / o[key]["tapegrad"] for o, n in zip(runs["old"], runs["new"])
                  if key in o and key in n and o[key]["tapegrad"] and n[key]["tapegrad"] is not None]
        lines.append([f"({key[1]}) {key[2]}", row["unit"], spread(col("old", "tapegrad"), ".4g"),
                      spread(col("old", "ratio"), ".3f"), spread(col("new", "tapegrad"), ".4g"),
                      spread(col("new", "ratio"), ".3f"), spread(paired, ".3f")])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print(" | ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    for which in ("old", "new"):  # (a checkout where a case failed: run.py's error, once)
        for key, row in runs[which][0].items():
            if row["error"]:
                print(f"{which}: ({key[1]}) {key[2]}: {row['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

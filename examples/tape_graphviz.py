"""Look at the tape: a small function in Wengert form, and as a Graphviz graph.

Records f(x, w) = sum(tanh(x @ w) * x[:, 0:1]) on an explicit tg.Tape,
prints the tape (one line per entry, in recording order: a topological
order), the gradient, and writes ``tape.to_dot()`` to a .dot file. If the
Graphviz ``dot`` program is on PATH it also renders a PNG; otherwise it says
it skipped that step.

Run: python examples/tape_graphviz.py [OUTPUT_STEM (default examples/out/tape)] [--small]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess

import numpy as np
from _output import default_output, ready

import tapegrad as tg
import tapegrad.numpy as tnp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stem", nargs="?", default=default_output("tape"),
                        help="writes STEM.dot (and STEM.png)")
    parser.add_argument("--small", action="store_true", help="accepted for uniformity; the "
                        "example is already small")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    with tg.Tape() as tape:
        x, w = tape.watch((x0, w0))
        y = tnp.sum(tnp.tanh(x @ w) * x[:, 0:1])
    print(f"{len(tape)} entries on the tape:")
    print(tape)
    # entries' .inputs / .outputs are node indices from one global counter (so they
    # also order entries across tapes); print(tape) renumbers them from %0
    print("entry by entry (global node indices):")
    for e in tape:
        print(f"  {e.primitive:12s} inputs {e.inputs} -> outputs {e.outputs}")
    gx, gw = tape.gradient(y, (x, w))
    print("dy/dw =\n", gw)

    dot_path = ready(f"{args.stem}.dot")
    with open(dot_path, "w") as fh:
        fh.write(tape.to_dot() + "\n")
    print(f"wrote {dot_path}")
    dot = shutil.which("dot")
    if dot is None:
        print("Graphviz `dot` not found on PATH: skipped rendering the PNG "
              f"(install graphviz, then run: dot -Tpng {dot_path} -o {args.stem}.png)")
    else:
        subprocess.run([dot, "-Tpng", dot_path, "-o", f"{args.stem}.png"], check=True)
        print(f"wrote {args.stem}.png")


if __name__ == "__main__":
    main()

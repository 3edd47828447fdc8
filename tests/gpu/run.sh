#!/usr/bin/env bash
# The CuPy tests on a real CUDA device: the same tests CI runs on the CPU model of CuPy
# (tests/cupy_model), here with real CuPy (TAPEGRAD_CUPY=real: a test skips rather than
# fall back to the model). Run from the repository root on a machine with a GPU:
#   bash tests/gpu/run.sh            # installs cupy-cuda12x when CuPy is missing
# Prints the pytest summary and the device; exits with pytest's status.
set -euo pipefail
cd "$(dirname "$0")/../.."
python -c "import cupy" 2>/dev/null || python -m pip install -q "cupy-cuda12x>=13"
python - <<'PY'
import cupy
n = cupy.cuda.runtime.getDeviceCount()
print(f"CuPy {cupy.__version__}, {n} device(s):",
      cupy.cuda.runtime.getDeviceProperties(0)["name"].decode() if n else "none")
PY
export TAPEGRAD_CUPY=real PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python -m pytest -q -p no:cacheprovider tests/test_cupy_library.py tests/test_cupy_optable.py \
  tests/test_gpu.py -rs "$@"

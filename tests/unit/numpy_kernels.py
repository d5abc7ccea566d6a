"""One set of numpy SIMD kernels for every machine the suite runs on.

The golden tests (predictor/test_golden.py, predictor/test_search_speedups.py,
simulation/test_learning_golden.py) pin the predictor's results to 1e-9 relative. numpy picks
its kernels (sum, exp, log, ...) by the CPU at import time, and its AVX-512 kernels round
differently in the last bits from its AVX2 ones; ADEPT's pattern search turns last-bit
differences into 1e-6 differences of A and σ, so the outputs recorded on an AVX2 machine
failed (103 tests) on the AVX-512 machine CI moved to on 2026-11-26, with no code change.

`pin` turns numpy's AVX-512 kernels off (NPY_DISABLE_CPU_FEATURES, numpy's documented switch)
before numpy is imported, so the suite computes with the AVX2 kernels on any x86-64 machine
that has them. It does nothing to a process that already imported numpy, nor where the
variable is already set (set it to "" to run the suite on the native kernels).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version

#: numpy's dispatch names of its AVX-512 kernel groups: numpy 1.x, and numpy 2.x (x86-64-v4).
_AVX512_V1 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"
_AVX512_V2 = "X86_V4 AVX512_ICL AVX512_SPR"
VARIABLE = "NPY_DISABLE_CPU_FEATURES"


def avx512_groups() -> str:
    """The installed numpy's names for its AVX-512 kernels (an unknown name makes numpy warn)."""
    try:
        major = int(version("numpy").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return _AVX512_V1
    return _AVX512_V1 if major < 2 else _AVX512_V2


def pin() -> None:
    """Disable numpy's AVX-512 kernels for this process and its children (module doc)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(VARIABLE, avx512_groups())

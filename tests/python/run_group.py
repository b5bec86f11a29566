# SPDX-License-Identifier: MIT
"""Run several tap test files in one Python process, so that they pay
`import torch` (37-53 s in a TCG guest) once: each file as __main__ in
turn, its own tests only; exits 1 if any file failed.

    python run_group.py test_a.py test_b.py
"""
import runpy
import sys

import tap

failed = False
for path in sys.argv[1:]:
    tap._tests.clear()
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        failed |= bool(e.code)
sys.exit(1 if failed else 0)

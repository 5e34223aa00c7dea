"""Build: the modules listed in shared/native.py compiled with mypyc (see that file for why).

Metadata lives in pyproject.toml; this file only adds the extension modules. The compiler runs
mypy over the sources with the project's own configuration, so it needs mypy and the runtime
dependencies importable: `make` installs those first, then builds with `--no-build-isolation`.
Without mypy (an isolated build) or a C compiler, or with FLEETPLACE_PURE_PYTHON=1, nothing is
compiled and the package is the plain Python source.
"""

from __future__ import annotations

import os
import runpy
import shutil
import sys
import sysconfig
import time
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
NATIVE = runpy.run_path(str(HERE / "shared" / "native.py"))


def extensions() -> list[object]:
    if os.environ.get(NATIVE["PURE_PYTHON_ENV"], "").strip() not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("fleetplace: mypy is not installed here; building the pure Python package", file=sys.stderr)
        return []
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        print(f"fleetplace: no C compiler ({compiler}); building the pure Python package", file=sys.stderr)
        return []
    paths = [NATIVE["package_path_of"](module) for module in NATIVE["MODULES"]]
    say(f"mypyc: type-checking the {len(paths)} modules of shared/native.py and translating them to C")
    # verbose: a line per module translated, and the time of each phase
    return list(mypycify(paths, opt_level="3", group_name=NATIVE["GROUP"], verbose=True))


def say(line: str) -> None:
    print(f"fleetplace: {line}", file=sys.stderr, flush=True)


class BuildExtensions(build_ext):
    """The C compiler's step, the longest, said before it starts and timed."""

    def run(self) -> None:
        if self.extensions:
            say(f"compiling the generated C into {len(self.extensions)} extension modules (the longest step)")
        started = time.monotonic()
        super().run()
        if self.extensions:
            say(f"compiled in {time.monotonic() - started:.0f} s")


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtensions})

"""acp-model --coverage: the coverage.py measurement of a Python agent's ACP layer.

Imported at start-up by every Python process of the agent (its folder is first on
PYTHONPATH); it starts coverage.py restricted to ACPM_COVERAGE_INCLUDE and writes the lines run
so far when the fuzzer asks (SIGUSR2, after each example) and at exit. A sitecustomize of the
interpreter's own, which this one shadows, is imported after it.
"""

import os
import sys


def _acpm_start() -> None:
    folder = os.environ.get("ACPM_COVERAGE_DIR")
    if not folder or getattr(sys, "_acpm_coverage", None) is not None:
        return
    import atexit
    import contextlib
    import json
    import signal

    if sys.version_info >= (3, 12):
        os.environ.setdefault("COVERAGE_CORE", "sysmon")  # no C tracer for this interpreter
    try:
        import coverage
    except ImportError:
        return
    include = json.loads(os.environ.get("ACPM_COVERAGE_INCLUDE") or "[]") or None
    cov = coverage.Coverage(data_file=None, config_file=False, include=include)
    cov.start()
    sys._acpm_coverage = cov
    start = ""
    try:
        with open("/proc/self/stat", encoding="utf-8") as fh:
            start = fh.read().split(") ")[1].split(" ")[19]
    except (OSError, IndexError):
        pass
    pid = os.getpid()
    with open(os.path.join(folder, f"pid-{pid}.json"), "w", encoding="utf-8") as fh:
        json.dump({"pid": pid, "runtime": "python", "start": start,
                   "executable": sys.executable}, fh)
    seq = [0]

    def save(ack: str) -> None:
        data = cov.get_data()
        lines = {f: sorted(data.lines(f) or ()) for f in data.measured_files()}
        seq[0] += 1
        out = os.path.join(folder, f"py-{pid}-{seq[0]}.json")
        with open(out + ".part", "w", encoding="utf-8") as fh:
            json.dump(lines, fh)
        os.replace(out + ".part", out)
        if ack:
            with open(os.path.join(folder, f"ack-{pid}-{ack}"), "w", encoding="utf-8"):
                pass

    def on_signal(signum: int, frame: object) -> None:
        try:
            with open(os.path.join(folder, "request"), encoding="utf-8") as fh:
                ask = fh.read().strip()
        except OSError:
            ask = ""
        save(ask)

    with contextlib.suppress(ValueError):  # not the main thread: snapshots only at exit
        signal.signal(signal.SIGUSR2, on_signal)
    atexit.register(lambda: save(""))


def _chain() -> None:
    """Import the sitecustomize this one shadows (the interpreter's own), if any."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.origin and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_acpm_start()
_chain()

"""Pin a PyPI profile's whole dependency tree once: ``python -m acp_model.profiles.lock NAME``.

It installs the profile's package at its pinned version into a scratch virtual environment
(the interpreter ``find_python`` picks for the profile), and writes ``pip freeze`` as the
profile's ``requirements.txt``: every distribution with ``==``, so that ``acp-model agents
install`` resolves nothing and installs with ``--no-deps``. A maintainer's step (it writes into
the source tree), run when a profile's version changes.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from acp_model.profiles import ProfileError, find_python, get


def freeze(name: str) -> str:
    """The ``requirements.txt`` text for profile ``name`` (a PyPI one)."""
    profile = get(name)
    if profile.registry != "pypi":
        raise ProfileError(f"profile {name} comes from {profile.registry}, not PyPI")
    python = find_python(profile.python)
    with tempfile.TemporaryDirectory(prefix="acp-model-lock-") as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
        subprocess.run([*pip, "install", "--quiet", f"{profile.package}=={profile.version}"],
                       check=True)
        pins = subprocess.run([*pip, "freeze", "--exclude-editable"], check=True,
                              capture_output=True, text=True).stdout
        version = subprocess.run([str(venv / "bin" / "python"), "-c",
                                  "import sys; print(*sys.version_info[:3], sep='.')"],
                                 check=True, capture_output=True, text=True).stdout.strip()
    return (f"# {profile.package}=={profile.version} and its whole tree, frozen on Python "
            f"{version} by `python -m acp_model.profiles.lock {name}`\n{pins}")


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    if not names:
        print("usage: python -m acp_model.profiles.lock NAME...", file=sys.stderr)
        return 2
    for name in names:
        try:
            text = freeze(name)
        except (ProfileError, subprocess.CalledProcessError) as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 2
        target = Path(__file__).resolve().parent / "data" / name / "requirements.txt"
        target.write_text(text, encoding="utf-8")
        print(f"{name}: {len(text.splitlines()) - 1} pins written to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

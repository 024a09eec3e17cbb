"""Pin a PyPI profile's whole dependency tree once: ``python -m acp_model.profiles.lock NAME``.

It resolves the profile's package at its pinned version with the interpreter ``find_python``
picks for the profile (``pip install --dry-run --ignore-installed --report``: pip's resolver,
nothing installed), and writes every distribution of the tree with ``==`` as the profile's
``requirements.txt``, so that ``acp-model agents install`` resolves nothing and installs with
``--no-deps``. A maintainer's step (it writes into the source tree), run when a profile's
version changes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from acp_model.profiles import Profile, ProfileError, find_python, get


def freeze(profile: Profile | str, index: str | None = None) -> str:
    """The ``requirements.txt`` text for a PyPI profile (or its name) at its version;
    ``index``: a package index to resolve from instead of pip's own settings (then nothing
    else of pip's configuration counts)."""
    if isinstance(profile, str):
        profile = get(profile)
    name = profile.name
    if profile.registry != "pypi":
        raise ProfileError(f"profile {name} comes from {profile.registry}, not PyPI")
    python = find_python(profile.python)
    where = ["--isolated", "--index-url", index] if index else []
    with tempfile.TemporaryDirectory(prefix="acp-model-lock-") as scratch:
        report = Path(scratch) / "report.json"
        done = subprocess.run([python, "-m", "pip", "install", *where,
                               "--disable-pip-version-check", "--quiet", "--dry-run",
                               "--ignore-installed", "--report", str(report),
                               f"{profile.package}=={profile.version}", *profile.companions],
                              check=False, capture_output=True, text=True)
        if done.returncode != 0:
            raise ProfileError(f"pip could not resolve {profile.package}=={profile.version}: "
                               f"{(done.stderr or done.stdout).strip()[-800:]}")
        plan = json.loads(report.read_text(encoding="utf-8"))
    pins = sorted(f"{item['metadata']['name']}=={item['metadata']['version']}"
                  for item in plan["install"])
    version = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
                             check=True, capture_output=True, text=True).stdout.strip()
    top = " ".join([f"{profile.package}=={profile.version}", *profile.companions])
    return (f"# {top} and the whole tree, resolved for Python "
            f"{version} by `python -m acp_model.profiles.lock {name}`\n"
            + "".join(f"{pin}\n" for pin in pins))


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

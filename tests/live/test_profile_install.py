"""The PyPI installer of agent profiles: a virtual environment holding exactly the pinned
distributions (a local wheel stands in for the registry; the registry itself:
tests/external/test_pypi_install.py)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from acp_model.profiles import Profile, ProfileError


def _wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel with a console script ``name`` printing its version."""
    module = name.replace("-", "_")
    files = {
        f"{module}/__init__.py": f"def main():\n    print('{name} {version}')\n",
        f"{module}-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{module}-{version}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: acp-model-test\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
        f"{module}-{version}.dist-info/entry_points.txt":
            f"[console_scripts]\n{name} = {module}:main\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{module}-{version}.dist-info/RECORD,,")
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{module}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def test_the_pypi_installer_makes_a_venv_with_exactly_the_pinned_requirements(
        tmp_path: Path) -> None:
    """A local wheel stands in for the registry (no network): the installer copies the
    requirements file into the cache, makes the venv and installs with --no-deps; the entry
    point then runs. A second profile whose pinned file is missing fails with pip's words."""
    source = tmp_path / "profile"
    source.mkdir()
    wheel = _wheel(tmp_path, "acpm-tiny", "1.2.3")
    (source / "requirements.txt").write_text(f"acpm-tiny @ {wheel.as_uri()}\n",
                                             encoding="utf-8")
    profile = Profile(name="tiny", title="tiny", package="acpm-tiny", version="1.2.3",
                      entry="venv/bin/acpm-tiny", command=("{entry}",), model_api="anthropic",
                      registry="pypi", source=source)
    cache = tmp_path / "cache"
    assert not profile.installed(cache)
    where = profile.install(cache)
    assert where == cache / "tiny-1.2.3" and profile.installed(cache)
    assert (where / "requirements.txt").read_text(encoding="utf-8").startswith("acpm-tiny @")
    done = subprocess.run(profile.argv(cache), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "acpm-tiny 1.2.3"
    frozen = subprocess.run([str(where / "venv/bin/python"), "-m", "pip", "freeze"],
                            capture_output=True, text=True, check=True).stdout
    assert [line.partition("#")[0] for line in frozen.splitlines() if line.strip()] == \
        [f"acpm-tiny @ {wheel.as_uri()}"]  # nothing else came in

    wheel.unlink()  # the pinned file is gone: a clear error naming the step
    broken = Profile(name="tiny", title="tiny", package="acpm-tiny", version="1.2.4",
                     entry="venv/bin/acpm-tiny", command=("{entry}",), model_api="anthropic",
                     registry="pypi", source=source)
    with pytest.raises(ProfileError, match="pip install for tiny failed"):
        broken.install(cache)

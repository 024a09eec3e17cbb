"""Agent profiles as data: each parses and pins its whole tree; the PyPI installer makes a
virtual environment holding exactly the pinned distributions."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from acp_model.profiles import PROFILES, Profile, ProfileError, _profile, find_python

DATA = Path(str(resources.files("acp_model.profiles").joinpath("data")))


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_there_are_at_least_twelve_profiles_and_most_can_run() -> None:
    assert len(PROFILES) >= 12, sorted(PROFILES)
    runnable = [name for name, p in PROFILES.items() if not p.unavailable]
    assert len(runnable) >= 7, runnable  # gemini-cli comes from another branch


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_profile_pins_its_package_in_its_own_lockfiles(name: str) -> None:
    profile = PROFILES[name]
    folder = DATA / name
    for lock in profile.lock_files():
        assert (folder / lock).is_file(), f"{name}: {lock} is missing"
    if profile.registry == "npm":
        manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
        assert manifest["dependencies"][profile.package] == profile.version
        lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
        assert lock["packages"][f"node_modules/{profile.package}"]["version"] == profile.version
        assert profile.entry.startswith("node_modules/"), profile.entry
    else:
        pins = {}
        for line in (folder / "requirements.txt").read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                dist, _, version = line.partition("==")
                assert version, f"{name}: {line!r} is not pinned with =="
                pins[_normalise(dist)] = version.strip()
        assert pins[_normalise(profile.package)] == profile.version, pins
        assert len(pins) > 1 or not profile.unavailable  # the whole tree, not the top only
        assert profile.entry.startswith("venv/bin/"), profile.entry
    assert profile.notes, f"{name}: say what was verified (or tried)"
    assert "{entry}" in " ".join(profile.command)


def test_a_profile_with_an_unknown_registry_is_refused() -> None:
    with pytest.raises(ProfileError, match="registry 'conda' is not one of npm, pypi"):
        _profile({"name": "x", "title": "x", "package": "x", "version": "1", "entry": "x",
                  "command": ["{entry}"], "model_api": "anthropic", "registry": "conda"})


def test_an_unavailable_profile_refuses_to_install_or_start(tmp_path: Path) -> None:
    profile = Profile(name="nope", title="nope", package="nope", version="1", entry="x",
                      command=("{entry}",), model_api="anthropic",
                      unavailable="needs an account login")
    for step in (lambda: profile.install(tmp_path), lambda: profile.argv(tmp_path)):
        with pytest.raises(ProfileError, match=r"cannot run offline.*needs an account login"):
            step()
    assert not any(tmp_path.iterdir())


def test_no_python_new_enough_is_a_clear_error() -> None:
    with pytest.raises(ProfileError, match=r"no Python 3\.99 or newer found"):
        find_python("3.99")
    assert find_python("3.0")  # the running one will do


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


@pytest.mark.slow  # makes a virtual environment and runs pip (seconds)
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


@pytest.mark.slow
@pytest.mark.external  # PyPI
def test_the_pypi_installer_installs_a_real_pinned_package_from_the_registry(
        tmp_path: Path) -> None:
    source = tmp_path / "profile"
    source.mkdir()
    (source / "requirements.txt").write_text("pyjokes==0.8.3\n", encoding="utf-8")
    profile = Profile(name="jokes", title="jokes", package="pyjokes", version="0.8.3",
                      entry="venv/bin/pyjoke", command=("{entry}",), model_api="anthropic",
                      registry="pypi", source=source)
    profile.install(tmp_path / "cache")
    done = subprocess.run(profile.argv(tmp_path / "cache"), capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip()


def test_every_profile_has_a_section_in_the_profiles_page() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents-profiles.md").read_text(
        encoding="utf-8")
    sections = set(re.findall(r"^### `([^`]+)`", page, re.MULTILINE))
    assert sections == set(PROFILES), sections ^ set(PROFILES)

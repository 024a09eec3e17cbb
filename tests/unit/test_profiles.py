"""Agent profiles as data: each parses and pins its whole tree. (The PyPI installer, which
makes a virtual environment and runs pip: tests/live/test_profile_install.py, and from the
registry itself tests/external/test_pypi_install.py.)"""

from __future__ import annotations

import json
import re
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


def test_every_profile_has_a_section_in_the_profiles_page() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents-profiles.md").read_text(
        encoding="utf-8")
    sections = set(re.findall(r"^### `([^`]+)`", page, re.MULTILINE))
    assert sections == set(PROFILES), sections ^ set(PROFILES)

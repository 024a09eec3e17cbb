"""``acp-model agents outdated`` and ``agents bump`` against a package registry on loopback
(tests/services/registry.py): npm's and PyPI's JSON as the real registries serve them, the
lock files refreshed by the npm and pip the command runs, nothing from the network."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_model.cli.main import main
from acp_model.profiles import load
from tests.services.registry import NpmRelease, PypiRelease, Registry, serve

NPM_PROFILE = '''name = "npm-agent"
title = "An npm agent"
package = "@acpm-test/agent"
version = "1.0.0"
entry = "node_modules/@acpm-test/agent/index.js"
command = ["node", "{entry}"]
model_api = "openai-chat"
protocols = [1]
'''
PYPI_PROFILE = '''name = "py-agent"
title = "A PyPI agent"
package = "acpm-test-agent"
version = "1.0"
registry = "pypi"
entry = "venv/bin/acpm-test-agent"
command = ["{entry}"]
model_api = "openai-chat"
protocols = [1]
'''


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    stand_in = Registry(
        npm={"@acpm-test/agent": [NpmRelease("1.0.0", "2026-01-02"),
                                  NpmRelease("1.1.0", "2026-02-03",
                                             {"@acpm-test/helper": "^2.0.0"}),
                                  NpmRelease("1.2.0-beta.1", "2026-03-04"),
                                  NpmRelease("1.1.5", "2026-03-05", deprecated="broken")],
             "@acpm-test/helper": [NpmRelease("2.0.0", "2025-12-01"),
                                   NpmRelease("2.3.1", "2026-01-15")]},
        pypi={"acpm-test-agent": [PypiRelease("1.0", "2026-01-02"),
                                  PypiRelease("1.1", "2026-02-03", ["acpm-test-dep>=0.2"]),
                                  PypiRelease("2.0b1", "2026-03-04"),
                                  PypiRelease("1.2", "2026-03-05", yanked=True)],
              "acpm-test-dep": [PypiRelease("0.1", "2025-01-01"),
                                PypiRelease("0.3", "2025-06-01")]})
    with serve(stand_in) as running:
        monkeypatch.setenv("npm_config_registry", running.url)
        monkeypatch.setenv("ACP_MODEL_PYPI_URL", running.url)
        monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
        monkeypatch.setenv("npm_config_update_notifier", "false")
        yield running


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    root = tmp_path / "profiles"
    (root / "npm-agent").mkdir(parents=True)
    (root / "npm-agent" / "profile.toml").write_text(NPM_PROFILE)
    (root / "npm-agent" / "package.json").write_text(
        '{"name": "acp-model-agent-npm-agent", "private": true, "version": "0.0.0",\n'
        ' "dependencies": {"@acpm-test/agent": "1.0.0"}}\n')
    (root / "npm-agent" / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    (root / "py-agent").mkdir()
    (root / "py-agent" / "profile.toml").write_text(PYPI_PROFILE)
    (root / "py-agent" / "requirements.txt").write_text("acpm-test-agent==1.0\n")
    return root


def test_outdated_lists_the_newer_final_releases_of_each_registry(
        registry: Registry, profiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "outdated", "--profiles", str(profiles), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    # no pre-release, no deprecated npm version, no yanked PyPI release
    assert found["npm-agent"]["newer"] == [{"version": "1.1.0", "published": "2026-02-03"}]
    assert found["py-agent"]["newer"] == [{"version": "1.1", "published": "2026-02-03"}]
    assert "/@acpm-test%2fagent" in registry.hits and "/pypi/acpm-test-agent/json" in \
        registry.hits
    assert main(["agents", "outdated", "--profiles", str(profiles)]) == 0
    table = capsys.readouterr().out
    assert "1.1.0 (2026-02-03)" in table and "agents bump NAME" in table


def test_bump_moves_an_npm_profile_and_locks_its_whole_tree(
        registry: Registry, profiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed (make test installs Node.js agents with it)")
    assert main(["agents", "bump", "npm-agent", "--profiles", str(profiles)]) == 0
    assert "1.0.0 -> 1.1.0" in capsys.readouterr().out
    folder = profiles / "npm-agent"
    assert load(profiles)["npm-agent"].version == "1.1.0"
    assert json.loads((folder / "package.json").read_text())["dependencies"] == {
        "@acpm-test/agent": "1.1.0"}
    lock = json.loads((folder / "package-lock.json").read_text())["packages"]
    agent = lock["node_modules/@acpm-test/agent"]
    served = registry.packument("@acpm-test/agent")["versions"]["1.1.0"]["dist"]
    assert agent["version"] == "1.1.0" and agent["integrity"] == served["integrity"]
    assert lock["node_modules/@acpm-test/helper"]["version"] == "2.3.1"  # its dependency too


def test_bump_moves_a_pypi_profile_and_pins_its_whole_tree(
        registry: Registry, profiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "bump", "py-agent", "--profiles", str(profiles)]) == 0
    assert "1.0 -> 1.1" in capsys.readouterr().out
    assert load(profiles)["py-agent"].version == "1.1"
    pins = [line for line in (profiles / "py-agent" / "requirements.txt").read_text()
            .splitlines() if not line.startswith("#")]
    assert pins == ["acpm-test-agent==1.1", "acpm-test-dep==0.3"]


def test_a_release_the_registry_does_not_have_is_a_usage_error(
        registry: Registry, profiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "bump", "py-agent", "--version", "9.9", "--profiles",
                 str(profiles)]) == 2
    assert "no release 9.9" in capsys.readouterr().err
    assert load(profiles)["py-agent"].version == "1.0"  # untouched

"""The PyPI installer of agent profiles against the registry itself (network: PyPI)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from acp_model.profiles import Profile


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

"""What stands behind the agent: the scripted model, and a real agent's profile.

``backend(cfg)`` starts the scripted model a configuration asks for (``model_api``), points the
agent at it (the API's environment variables, a profile's environment and files) and gives the
agent a workspace of its own: the scripted model's tool calls write files only in its scratch
folder (``llm.tools.SCRATCH``), never into the user's directory. Everything started is stopped
and removed on exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator

from acp_model.agentcov import Collector, Scope
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import serves
from acp_model.llm.server import ScriptedModel
from acp_model.llm.tools import SCRATCH_DIR
from acp_model.profiles import Profile


def profile_config(cfg: FuzzConfig, profile: Profile, protocol: int = 2) -> FuzzConfig:
    """``cfg`` for a profiled agent: its command, model API, session configuration and auth
    (its environment and files are set up by :func:`backend`, which knows the model's URL)."""
    return dataclasses.replace(
        cfg, argv=profile.argv(), model_api=profile.model_api, profile=profile.name,
        profile_package=f"{profile.package}@{profile.version}",
        session_config=tuple((r.method, dict(r.params))
                             for r in profile.config_requests(protocol)),
        auth_method=profile.auth_method, sessions_ahead=profile.sessions_ahead,
        close_sessions=profile.close_sessions, reuse_sessions=profile.reuse_sessions,
        patience=profile.patience,
        coverage_scope=cfg.coverage_scope or profile.coverage_layer,
        coverage_root=cfg.coverage_root or str(profile.install_dir()),
        # a real agent starts in seconds and answers through a model round trip
        startup_deadline=max(cfg.startup_deadline, 60.0), deadline=max(cfg.deadline, 5.0))


@contextlib.contextmanager
def backend(cfg: FuzzConfig, profile: Profile | None = None) -> Iterator[FuzzConfig]:
    """The configuration with its scripted model running (a no-op without ``model_api`` or
    when one is already running), and with ``coverage`` its collector, whose hooks the
    agent's environment then carries."""
    with contextlib.ExitStack() as stack:
        collector = cfg.collector
        if cfg.coverage and collector is None:
            own = profile is not None and cfg.coverage_scope == profile.coverage_layer
            scope = Scope.parse(cfg.coverage_scope, cfg.coverage_root,
                                f"profile {profile.name}" if own and profile else
                                "--coverage-scope")
            collector = stack.enter_context(Collector(scope))
        running = stack.enter_context(_model(cfg, profile))
        if running.cwd is None and running.workspace is None and running.client is not None \
                and any(any(serves(running.client.capabilities(v)).values()) for v in (1, 2)):
            # a client that serves files or terminals serves them in a workspace of its own,
            # never in the user's directory (the agent still starts in it: relative paths of
            # its command line keep working)
            root = tempfile.mkdtemp(prefix="acp-model-workspace-")
            stack.callback(shutil.rmtree, root, True)
            running = dataclasses.replace(running, workspace=root)
        if collector is not None and cfg.collector is None:
            base = running.env if running.env is not None else dict(os.environ)
            running = dataclasses.replace(running, collector=collector,
                                          env={**base, **collector.env(base)})
        yield running


@contextlib.contextmanager
def _model(cfg: FuzzConfig, profile: Profile | None) -> Iterator[FuzzConfig]:
    """``cfg`` with the scripted model it asks for running, the profile's home prepared and
    the agent's workspace made."""
    if cfg.model_api is None or cfg.model is not None:
        yield cfg
        return
    with contextlib.ExitStack() as stack:
        root = tempfile.mkdtemp(prefix="acp-model-agent-")
        stack.callback(shutil.rmtree, root, True)
        workspace = cfg.cwd or os.path.join(root, "workspace")
        os.makedirs(os.path.join(workspace, SCRATCH_DIR), exist_ok=True)
        # a profile's tool hints steer the choice (``--no-tool-hints`` leaves it to the
        # chooser alone: what an agent without a profile gets)
        prefer = profile.prefer_tools if profile is not None and cfg.tool_hints else ()
        model = stack.enter_context(ScriptedModel(cfg.model_api, workspace=workspace,
                                                  prefer_tools=prefer))
        env = {**(cfg.env if cfg.env is not None else os.environ), **model.env()}
        if profile is not None:
            home = os.path.join(root, "home")
            os.makedirs(home, exist_ok=True)
            profile.prepare(home, model.url)
            env.update(profile.environment(home, model.url))
        argv = cfg.argv if cfg.cwd is not None else anchored(cfg.argv)
        yield dataclasses.replace(cfg, argv=argv, model=model, env=env, cwd=workspace)


def anchored(argv: list[str]) -> list[str]:
    """``argv`` as the caller meant it, for a process started in another directory (the
    run's workspace): a relative command path (``.venv/bin/python``) and each argument that
    names an existing path relative to the caller's directory (``agent.py``) made absolute."""
    if not argv:
        return argv
    head = argv[0]
    if os.sep in head and not os.path.isabs(head):
        head = os.path.abspath(head)
    rest = [os.path.abspath(a) if a and not a.startswith("-") and not os.path.isabs(a)
            and os.path.exists(a) else a for a in argv[1:]]
    return [head, *rest]

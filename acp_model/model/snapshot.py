"""Copies and canonical snapshots of session models, derived from their dataclass fields.

The explorer clones a model on every edge and keys configurations by a snapshot. Both are
generated here from the fields of :class:`~acp_model.model.session.SessionModel` and of its
records, so a new field is copied and compared without anybody remembering to add it (the
hand-written versions they replace dropped new fields silently). The code is generated once per
class (``exec`` of a specialised function): the explorer calls these about a hundred thousand
times a second, and a generic loop over ``dataclasses.fields`` costs several times more.

Field metadata steers the snapshot:

* ``index``: a trace index; replaced by a rank that keeps every order a check or a future
  frontier can compare: indices the agent has provably read rank by their order within their
  own session, as negative numbers (was the cancel sent before the prompt? the frontier only
  grows, so their order against other sessions' indices no longer matters); unread ones rank
  densely across all sessions of the connection (which the next response proves read),
  ``None`` when negative (unset);
* ``snapshot=False`` (with a ``why``): left out of the key because no check reads it (the
  explanatory indices of a permission request, its options); :data:`EXCLUDED` lists them and
  ``tests/unit/test_snapshot.py`` keeps the list honest;
* ``perm_ref``: holds a permission request id; replaced by that request's position;
* ``canon``: the name of a model method mapping ``(value, record)`` to what matters for the
  future (the record is None for a field of the model itself).

The model class's ``SNAPSHOT_QUERIES`` name methods whose answers join the snapshot: what the
shared context decides beyond the read frontier (which unread cancels the agent probably read).

Sets become sorted tuples, records tuples of their fields, the ``perms`` mapping keeps only the
order of its values (ids are positions).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

EXCLUDED: dict[tuple[str, str], str] = {}  # (class, field) -> why it is not in the snapshot


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # the model's module imports the record classes


def _record_type(hint: Any) -> type | None:
    """The record class a list / dict field holds (None for plain values)."""
    args = typing.get_args(hint)
    inner = args[-1] if args else None
    return inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None


def _model_fields(model_cls: type) -> list[tuple[str, str, type | None]]:
    """(name, container kind, record class) of every copied / snapshotted model field."""
    hints = _hints(model_cls)
    out = []
    for f in dataclasses.fields(model_cls):
        if f.name in ("sid", "ctx"):
            continue  # identity and the shared context, never copied
        hint = hints[f.name]
        origin = typing.get_origin(hint)
        kind = {list: "list", dict: "dict", set: "set"}.get(origin, "value")  # type: ignore
        out.append((f.name, kind, _record_type(hint)))
    return out


def _value(expr: str, meta: Any, rec: str, var: str = "None") -> str | None:
    """Python expression for one field in the snapshot (None: left out); ``var`` names the
    record the field belongs to, passed to its ``canon`` method."""
    if meta.get("snapshot") is False:
        EXCLUDED[(rec, expr.split(".")[-1])] = meta.get("why", "")
        return None
    if meta.get("index"):
        return f"(None if {expr} < 0 else rank[{expr}])"
    if meta.get("perm_ref"):
        return f"pos.get({expr})"
    if meta.get("canon"):
        return f"m.{meta['canon']}({expr}, {var})"
    return expr


def _record_expr(cls: type, var: str) -> str:
    parts = [e for f in dataclasses.fields(cls)
             if (e := _value(f"{var}.{f.name}", f.metadata, cls.__name__, var)) is not None]
    return "(" + "".join(p + ", " for p in parts) + ")"


@cache
def _generated(model_cls: type) -> tuple[Callable[..., Any], Callable[..., Any],  # noqa: C901, PLR0915
                                         Callable[..., Any]]:
    """Compile clone, snapshot and indices for ``model_cls``."""
    # plain values come with one copy of the instance dict; containers are replaced below
    clone = ["def clone(m, ctx):", "    c = object.__new__(M)", "    d = m.__dict__.copy()",
             "    d['ctx'] = ctx"]
    snap = ["def snapshot(m, rank):",
            "    pos = {k: n for n, k in enumerate(m.perms)} if m.perms else {}", "    return ("]
    index_exprs: list[str] = []
    names: dict[str, Any] = {"M": model_cls}
    model_meta = {f.name: f.metadata for f in dataclasses.fields(model_cls)}
    for name, kind, rec in _model_fields(model_cls):
        meta = model_meta[name]
        if rec is not None:
            names[rec.__name__] = rec
            args = ", ".join(f"x.{f.name}" for f in dataclasses.fields(rec))
            copy = f"{rec.__name__}({args})"
            if meta.get("snapshot") is False:  # copied, not compared (nor its indices)
                EXCLUDED[(model_cls.__name__, name)] = meta.get("why", "")
                clone.append(f"    d['{name}'] = {{k: {copy} for k, x in m.{name}.items()}} "
                             f"if m.{name} else {{}}" if kind == "dict" else
                             f"    d['{name}'] = [{copy} for x in m.{name}]")
                continue
            if kind == "list":
                clone.append(f"    d['{name}'] = [{copy} for x in m.{name}] if m.{name} else []")
                item = _record_expr(rec, "x")
                snap.append(f"        tuple([{item} for x in m.{name}]),")
                seq = f"m.{name}"
            else:
                clone.append(f"    d['{name}'] = {{k: {copy} for k, x in m.{name}.items()}} "
                             f"if m.{name} else {{}}")
                item = _record_expr(rec, "x")
                if name == "perms":  # keyed by request id: the order of values is the key
                    snap.append(f"        tuple([{item} for x in m.{name}.values()]),")
                else:
                    snap.append(f"        tuple(sorted([(k, {item}) for k, x in "
                                f"m.{name}.items()])) if m.{name} else (),")
                seq = f"m.{name}.values()"
            for f in dataclasses.fields(rec):
                if f.metadata.get("index") and f.metadata.get("snapshot") is not False:
                    index_exprs.append(f"[x.{f.name} for x in {seq} if x.{f.name} >= 0]")
        elif kind == "set":
            clone.append(f"    d['{name}'] = m.{name}.copy() if m.{name} else set()")
            if _value(f"m.{name}", meta, model_cls.__name__) is not None:
                snap.append(f"        tuple(sorted(m.{name})) if m.{name} else (),")
        elif kind in ("list", "dict"):
            clone.append(f"    d['{name}'] = m.{name}.copy() if m.{name} else {kind}()")
            if _value(f"m.{name}", meta, model_cls.__name__) is not None:
                snap.append(f"        tuple(m.{name}),")
        else:
            expr = _value(f"m.{name}", meta, model_cls.__name__)
            if expr is not None:
                snap.append(f"        {expr},")
                if meta.get("index"):
                    index_exprs.append(f"[m.{name}] if m.{name} >= 0 else []")
    for query in getattr(model_cls, "SNAPSHOT_QUERIES", ()):
        snap.append(f"        m.{query}(),")
    clone += ["    c.__dict__ = d", "    return c"]
    snap.append("    )")
    idx = ["def indices(m):", "    out = set()"]
    idx += [f"    out.update({e})" for e in index_exprs]
    idx.append("    return out")
    source = "\n".join(clone + snap + idx) + "\n"
    exec(compile(source, f"<snapshot of {model_cls.__name__}>", "exec"), names)
    return names["clone"], names["snapshot"], names["indices"]


def compiled(model_cls: type) -> tuple[Callable[..., Any], Callable[..., Any],
                                       Callable[..., Any]]:
    """``(clone, snapshot, indices)`` of ``model_cls`` without the per-call dispatch on the
    model's type: ``clone(model, ctx)``, ``snapshot(model, rank)``, ``indices(model)`` (the
    explorer, which calls them on every edge, looks them up once)."""
    return _generated(model_cls)


def clone(model: Any, ctx: Any = None) -> Any:
    """A copy that shares nothing mutable, bound to ``ctx`` (default: the same context)."""
    return _generated(type(model))[0](model, model.ctx if ctx is None else ctx)


def indices(model: Any) -> set[int]:
    """Every trace index the snapshot of ``model`` refers to."""
    return _generated(type(model))[2](model)


def joint_ranks(models: Iterable[Any]) -> dict[int, int]:
    """Dense ranks of the unread indices of sessions that share one read frontier."""
    models = list(models)
    frontier = models[0].ctx.frontier if models else -1
    unread = sorted({i for m in models for i in indices(m) if i > frontier})
    return {i: n for n, i in enumerate(unread)}


def session_ranks(held: Iterable[int], frontier: int, joint: dict[int, int]) -> dict[int, int]:
    """One session's ranks: its read indices by their order, negative, then ``joint``."""
    read = sorted(i for i in held if i <= frontier)
    rank = {i: k - len(read) for k, i in enumerate(read)}
    rank.update(joint)
    return rank


def snapshot(model: Any, rank: dict[int, int] | None = None) -> tuple[Any, ...]:
    """Canonical, hashable abstraction of the model's state (the explorer's node key).

    Exact: two models with equal snapshots accept the same futures. Sessions sharing a context
    pass a ``rank`` from :func:`session_ranks` over :func:`joint_ranks` of all of them.
    """
    if rank is None:
        rank = session_ranks(indices(model), model.ctx.frontier, joint_ranks([model]))
    return _generated(type(model))[1](model, rank)

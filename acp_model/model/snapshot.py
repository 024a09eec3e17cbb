"""Copies and canonical snapshots of session models, derived from their dataclass fields.

The explorer clones a model on every edge and keys configurations by a snapshot. Both are
generated here from the fields of :class:`~acp_model.model.session.SessionModel`, of its parts
(fields holding dataclasses of their own: the prompt queue, the cancel and permission books, the
work; copied afresh, their fields snapshotted in place) and of their records, so a new field is
copied and compared without anybody remembering to add it (the
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
* ``canon``: the path of a method on the model (``dead.canon_ran``: its dead fields) mapping
  ``(value, record)`` to what matters for the future (the record is None for a field of the
  model itself): the model states, beside the field, when no check can read it any more
  (which checks read it, and why none can once some fact holds), and two configurations that
  differ only there are one node. On an ``index`` field the method returns the index to rank
  or ``-1`` (dead: the snapshot holds ``None`` and the index ranks nothing, so it moves no
  other index's rank either).

``compiled(cls, canon=False)`` builds the snapshot without any ``canon`` method (every value
as the model holds it): the tests explore with both and compare the verdicts, which is how a
``canon`` method that drops a live value fails.

The model class's ``SNAPSHOT_QUERIES`` name methods (paths, as ``canon``) whose answers join
the snapshot: what the shared context decides beyond the read frontier (which unread cancels
the agent probably read); a view named so (``facts``, a ``session.View``) is made once per
snapshot. Views are no fields, so never copied: a clone, or a :func:`share` of the parts for a
session an event does not touch, reads its own context through its own views.

Sets become sorted tuples, records tuples of their fields, the ``perms`` mapping keeps only the
order of its values (ids are positions).
"""

from __future__ import annotations

import dataclasses
import re
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


@dataclasses.dataclass(frozen=True)
class _Field:
    """One copied / snapshotted field: where it is read (``m.queue``), its name, container kind,
    record class, metadata and the class declaring it."""

    at: str
    name: str
    kind: str  # list, dict, set or value
    rec: type | None
    meta: Any
    owner: str

    @property
    def expr(self) -> str:
        return f"{_local(self.at)}.{self.name}"


def _local(at: str) -> str:
    """The local name the generated code reads the object at ``at`` through (``m.queue``:
    ``m_queue``), bound once per call (:func:`_bound`) instead of looked up per field."""
    return at.replace(".", "_")


def _bound(model_cls: type, lines: list[str]) -> list[str]:
    """``lines`` of a generated function, after the lines binding the parts they read by
    their local names (parents first)."""
    used = set(re.findall(r"\bm_\w+", "\n".join(lines)))

    def walk(cls: type, at: str) -> list[str]:
        out = []
        for name, part in _parts(cls):
            path = f"{at}.{name}"
            inner = walk(part, path)
            if _local(path) in used or inner:
                out += [f"    {_local(path)} = {_local(at)}.{name}", *inner]
        return out

    return walk(model_cls, "m") + lines


_OWN = ("sid", "ctx")  # the model's identity and shared context: never copied


def _parts(cls: type) -> list[tuple[str, type]]:
    """The fields holding objects of their own (dataclasses): ``(name, class)``."""
    hints = _hints(cls)
    return [(f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.name not in _OWN
            and isinstance(hints[f.name], type) and dataclasses.is_dataclass(hints[f.name])]


def _fields(cls: type, at: str) -> list[_Field]:
    """Every copied / snapshotted field of ``cls`` read at ``at``, those of its parts (nested
    dataclasses) in their place."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if at == "m" and f.name in _OWN:
            continue
        hint = hints[f.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            out += _fields(hint, f"{at}.{f.name}")
            continue
        kind = {list: "list", dict: "dict", set: "set"}.get(typing.get_origin(hint), "value")  # type: ignore
        out.append(_Field(at, f.name, kind, _record_type(hint), f.metadata, cls.__name__))
    return out


def _canon(expr: str, meta: Any, var: str, canon: bool) -> str:
    """``expr`` through the field's ``canon`` method, if it has one and ``canon`` is on (a
    view's method, "dead.canon_ran": the view is made once per snapshot)."""
    if not canon or not meta.get("canon"):
        return expr
    view, _, method = meta["canon"].rpartition(".")
    return f"v_{view}.{method}({expr}, {var})" if view else f"m.{method}({expr}, {var})"


def _value(expr: str, meta: Any, rec: str, var: str = "None", canon: bool = True
           ) -> str | None:
    """Python expression for one field in the snapshot (None: left out); ``var`` names the
    record the field belongs to, passed to its ``canon`` method."""
    if meta.get("snapshot") is False:
        EXCLUDED[(rec, expr.split(".")[-1])] = meta.get("why", "")
        return None
    if meta.get("index"):
        if canon and meta.get("canon"):  # -1 (dead) is in no rank
            return f"rank.get({_canon(expr, meta, var, canon)})"
        return f"(None if {expr} < 0 else rank[{expr}])"
    if meta.get("perm_ref"):
        return f"pos.get({expr})"
    return _canon(expr, meta, var, canon)


def _record_expr(cls: type, var: str, canon: bool) -> str:
    parts = [e for f in dataclasses.fields(cls)
             if (e := _value(f"{var}.{f.name}", f.metadata, cls.__name__, var, canon))
             is not None]
    return "(" + "".join(p + ", " for p in parts) + ")"


def _copy_records(f: _Field, target: str) -> list[str] | None:
    """Lines copying field ``f``'s container of records into ``target``: each record made
    with ``object.__new__`` and its fields set in a plain loop (a comprehension of
    ``__init__`` calls costs twice as much for the one or two records a container holds).
    None for records that cannot be set so (frozen): :func:`_copy` calls their class."""
    rec = f.rec
    if rec is None or rec.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return None
    e = f.expr
    sets = [f"        r.{r.name} = x.{r.name}" for r in dataclasses.fields(rec)]
    if f.kind == "list":
        return [f"    {target} = []", f"    for x in {e}:", f"        r = _new({rec.__name__})",
                *sets, f"        {target}.append(r)"]
    return [f"    {target} = {{}}", f"    for k, x in {e}.items():",
            f"        r = _new({rec.__name__})", *sets, f"        {target}[k] = r"]


def _copy(f: _Field) -> str:
    """The expression copying field ``f`` (records and containers afresh)."""
    e = f.expr
    if f.rec is not None:
        copy = f"{f.rec.__name__}({', '.join(f'x.{r.name}' for r in dataclasses.fields(f.rec))})"
        if f.kind == "list":
            return f"[{copy} for x in {e}] if {e} else []"
        return f"{{k: {copy} for k, x in {e}.items()}} if {e} else {{}}"
    if f.kind == "set":
        return f"{e}.copy() if {e} else set()"
    if f.kind in ("list", "dict"):
        return f"{e}.copy() if {e} else {'[]' if f.kind == 'list' else '{}'}"
    return e


def _held(expr: str, meta: Any, var: str, canon: bool) -> str:
    """The index an ``index`` field holds, as the snapshot ranks it (-1: none)."""
    return _canon(expr, meta, var, canon) if meta.get("canon") else expr


def _snap(f: _Field, perms: str, canon: bool) -> tuple[list[str], list[str], list[str]]:
    """Field ``f`` in the generated code: statements building its records' tuple before the
    snapshot, its element of the snapshot, and statements adding its indices to ``out`` (for
    ``indices``). Records are walked in plain loops: a comprehension is a call each time it
    runs, most of what a container of one or two records costs."""
    e = f.expr
    if f.rec is None:
        expr = _value(e, f.meta, f.owner, canon=canon)
        if expr is None:
            return [], [], []
        if f.kind == "set":
            return [], [f"tuple(sorted({e})) if {e} else (),"], []
        if f.kind in ("list", "dict"):
            return [], [f"tuple({e}),"], []
        if not f.meta.get("index"):
            return [], [f"{expr},"], []
        held = _held(e, f.meta, "None", canon)
        return [], [f"{expr},"], [f"    i = {held}", "    if i >= 0:", "        out.add(i)"]
    if f.meta.get("snapshot") is False:  # copied, not compared (nor its indices)
        EXCLUDED[(f.owner, f.name)] = f.meta.get("why", "")
        return [], [], []
    item = _record_expr(f.rec, "x", canon)
    seq = e if f.kind == "list" else f"{e}.values()"
    # an empty container (most of them, in most states) costs a test, not a loop
    if f.kind == "list" or e == perms:  # perms: keyed by request id, the order of values is key
        t = f"t_{_local(f.at)}_{f.name}"
        pre = [f"    if {e}:", f"        {t} = []", f"        for x in {seq}:",
               f"            {t}.append({item})", f"        {t} = tuple({t})", "    else:",
               f"        {t} = ()"]
        line = f"{t},"
    else:
        pre, line = [], f"tuple(sorted([(k, {item}) for k, x in {e}.items()])) if {e} else (),"
    held = [_held(f"x.{r.name}", r.metadata, "x", canon) for r in dataclasses.fields(f.rec)
            if r.metadata.get("index") and r.metadata.get("snapshot") is not False]
    if not held:
        return pre, [line], []
    adds = [a for h in held for a in (f"        i = {h}", "        if i >= 0:",
                                      "            out.add(i)")]
    return pre, [line], [f"    for x in {seq}:", *adds]


def _build(cls: type, at: str, fields: list[_Field], copy: bool,
           only: frozenset[str] | None = None) -> list[str]:
    """Lines that make a copy of the object at ``at`` (of ``cls``) in ``o_<path>``: its parts
    built first; ``copy``: containers copied (a clone), else parts shared (a shallow share);
    ``only``: the parts of the model copied, the others shared (copy on write)."""
    var = "o_" + _local(at)
    lines: list[str] = []
    items: list[tuple[str, str]] = []
    for name, part in _parts(cls):
        if not copy or (only is not None and name not in only):  # shared
            items.append((name, _local(f"{at}.{name}")))
            continue
        lines += _build(part, f"{at}.{name}", fields, copy)
        items.append((name, f"{var}_{name}"))
    for f in fields:
        if f.at != at:
            continue
        records = _copy_records(f, f"c_{var}_{f.name}") if copy else None
        if records is not None:
            lines += records
            items.append((f.name, f"c_{var}_{f.name}"))
        else:
            items.append((f.name, _copy(f) if copy else f.expr))
    lines.append(f"    {var} = _new({cls.__name__})")
    if at != "m":  # a part (slots): one attribute at a time
        return lines + [f"    {var}.{name} = {expr}" for name, expr in items]
    items[:0] = [("sid", "m.sid"), ("ctx", "ctx")]
    return [*lines, f"    {var}.__dict__ = {{{', '.join(f'{n!r}: {e}' for n, e in items)}}}"]


def _metas(f: _Field) -> list[Any]:
    """The metadata of field ``f`` and of its records' fields."""
    return [f.meta, *(r.metadata for r in dataclasses.fields(f.rec))] if f.rec else [f.meta]


def _names(model_cls: type, fields: list[_Field]) -> dict[str, Any]:
    """The classes the generated code makes: the model's, its parts' and their records'."""
    names: dict[str, Any] = {model_cls.__name__: model_cls, "_new": object.__new__}
    names.update({cls.__name__: cls for _, cls in _parts(model_cls)})
    names.update({f.rec.__name__: f.rec for f in fields if f.rec is not None})
    return names


@cache
def _generated(model_cls: type, canon: bool = True) -> tuple[Callable[..., Any], ...]:
    """Compile clone, snapshot, indices and share for ``model_cls`` (``canon``: through the
    fields' ``canon`` methods)."""
    fields = _fields(model_cls, "m")
    names = _names(model_cls, fields)
    perms = next((f.expr for f in fields if f.name == "perms"), "m.perms")
    queries = getattr(model_cls, "SNAPSHOT_QUERIES", ())
    views = sorted({c.rpartition(".")[0] for f in fields for r in _metas(f)
                    if canon and (c := r.get("canon")) and "." in c}
                   | {q.rpartition(".")[0] for q in queries if "." in q})
    index_views = sorted({c.rpartition(".")[0] for f in fields for r in _metas(f)
                          if canon and r.get("index") and (c := r.get("canon")) and "." in c})
    made = {v: _view(model_cls, v, names) for v in views}
    pos = f"    pos = dict(zip({perms}, range(len({perms})))) if {perms} else {{}}"
    pre, body, held = [pos], ["    return ("], ["    out = set()"]
    for f in fields:
        before, lines, adds = _snap(f, perms, canon)
        pre += before
        body += [f"        {line}" for line in lines]
        held += adds
    body += [f"        {'v_' if '.' in q else 'm.'}{q}()," for q in queries]
    body.append("    )")
    snap = ["def snapshot(m, rank):",
            *_bound(model_cls, [*[made[v] for v in views], *pre, *body])]
    idx = ["def indices(m):",
           *_bound(model_cls, [*[made[v] for v in index_views], *held, "    return out"])]
    # indices, the ranks ``ranks(held, arg)`` makes of them and the snapshot, in one call
    # (the explorer's per-edge key: one frame and one of each view instead of two)
    keyed = ["def keyed(m, ranks, arg):", *_bound(model_cls, [
        *[made[v] for v in views], *held, "    rank = ranks(out, arg)", *pre, "    snap = (",
        *body[1:], "    return snap, rank"])]
    clone = ["def clone(m, ctx):",
             *_bound(model_cls, [*_build(model_cls, "m", fields, True), "    return o_m"])]
    share = ["def share(m, ctx):",
             *_bound(model_cls, [*_build(model_cls, "m", fields, False), "    return o_m"])]
    source = "\n".join(clone + snap + idx + keyed + share) + "\n"
    exec(compile(source, f"<snapshot of {model_cls.__name__}>", "exec"), names)
    return (names["clone"], names["snapshot"], names["indices"], names["share"],
            names["keyed"])


def _view(model_cls: type, name: str, names: dict[str, Any]) -> str:
    """The line making view ``name`` of the model as ``v_<name>``: straight from its class
    when the model's class attribute is a view (``session.View`` gives its class on the
    class, as the engine's guards use it: one call less per view), else through the
    attribute."""
    cls = getattr(model_cls, name, None)
    if not isinstance(cls, type):
        return f"    v_{name} = m.{name}"
    names[f"_view_{name}"] = cls
    return f"    v_{name} = _view_{name}(m)"


@cache
def copier(model_cls: type, parts: frozenset[str]) -> Callable[[Any, Any], Any]:
    """``copy(model, ctx)``: a copy of ``model`` bound to ``ctx`` that copies the parts named
    in ``parts`` as :func:`clone` does and shares the others with ``model``, for an event
    whose actions write only those (the stored original is never mutated)."""
    unknown = parts - {name for name, _ in _parts(model_cls)}
    if unknown:
        raise ValueError(f"{model_cls.__name__} has no parts {sorted(unknown)}")
    fields = _fields(model_cls, "m")
    names = _names(model_cls, fields)
    source = "\n".join(["def copy(m, ctx):", *_bound(model_cls, [
        *_build(model_cls, "m", fields, True, parts), "    return o_m"])]) + "\n"
    exec(compile(source, f"<copy of {model_cls.__name__}: {', '.join(sorted(parts))}>",
                 "exec"), names)
    return names["copy"]


def parts(model_cls: type) -> dict[str, type]:
    """The model's parts (fields holding objects of their own) and their classes."""
    return dict(_parts(model_cls))


def compiled(model_cls: type, canon: bool = True, product: bool = False
             ) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """``(clone, snapshot, indices)`` of ``model_cls`` without the per-call dispatch on the
    model's type: ``clone(model, ctx)``, ``snapshot(model, rank)``, ``indices(model)`` (the
    explorer, which calls them on every edge, looks them up once). ``canon=False``: every
    value as the model holds it, no ``canon`` method applied (the tests' reference key).
    ``product``: for models whose context judges by a product of readings (``ctx.product``,
    see :func:`_each_reading`)."""
    return _compiled(model_cls, canon, product)


@cache
def _compiled(model_cls: type, canon: bool, product: bool = False
              ) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    clone_, snapshot_, indices_, _, _ = _generated(model_cls, canon)
    if product:
        snapshot_, indices_ = _each_reading(snapshot_, indices_)
    return clone_, snapshot_, indices_


def keyed(model_cls: type, canon: bool = True) -> Callable[..., Any]:
    """``keyed(model, ranks, arg) -> (snapshot, rank)``: the indices the snapshot ranks,
    ``rank = ranks(indices, arg)`` (the caller's choice of ranks, see :func:`session_ranks`)
    and the snapshot under them, in one generated call, as :func:`compiled`'s ``indices``
    then ``snapshot`` would give. Not for a context judging by a product of readings (its
    key is a snapshot per reading, :func:`_each_reading`)."""
    return _generated(model_cls, canon)[4]


def _each_reading(snap: Callable[..., Any], held: Callable[..., set[int]]
                  ) -> tuple[Callable[..., Any], Callable[..., set[int]]]:
    """``snapshot`` and ``indices`` exact under every reading of ``ctx.product``: the ``canon``
    methods and ``SNAPSHOT_QUERIES`` ask the context's readings (``A-04=idle-cancelled`` keeps
    ``CancelRec.owes_reply`` live, ``A-04=noop`` not), so the key is the snapshot under each
    reading, and the indices those snapshots rank are the union of each reading's. (Asking
    each method for "live under any reading" instead would need every method to say so.)"""

    def each(m: Any, f: Callable[..., Any]) -> list[Any]:
        ctx = m.ctx
        first = ctx.readings
        out = []
        try:
            for r in ctx.product:
                ctx.readings = r
                out.append(f(m))
        finally:
            ctx.readings = first
        return out

    def snapshot(m: Any, rank: dict[int, int]) -> tuple[Any, ...]:
        if not m.ctx.product:
            return snap(m, rank)
        return tuple(each(m, lambda m: snap(m, rank)))

    def indices(m: Any) -> set[int]:
        if not m.ctx.product:
            return held(m)
        return set().union(*each(m, held))

    return snapshot, indices


def clone(model: Any, ctx: Any = None) -> Any:
    """A copy that shares nothing mutable, bound to ``ctx`` (default: the same context)."""
    return _generated(type(model))[0](model, model.ctx if ctx is None else ctx)


def share(model: Any, ctx: Any) -> Any:
    """A shallow copy bound to ``ctx``: it shares the parts and their containers (for the
    sessions an event does not touch: the stored original is never mutated), not the views
    made from the original (``session.View``), which read the original's context."""
    return _generated(type(model))[3](model, ctx)


def indices(model: Any, canon: bool = True) -> set[int]:
    """Every trace index the snapshot of ``model`` refers to."""
    return _compiled(type(model), canon, bool(model.ctx.product))[2](model)


def joint_ranks(models: Iterable[Any], canon: bool = True) -> dict[int, int]:
    """Dense ranks of the unread indices of sessions that share one read frontier."""
    models = list(models)
    frontier = models[0].ctx.frontier if models else -1
    unread = sorted({i for m in models for i in indices(m, canon) if i > frontier})
    return {i: n for n, i in enumerate(unread)}


def session_ranks(held: Iterable[int], frontier: int, joint: dict[int, int]) -> dict[int, int]:
    """One session's ranks: its read indices by their order, negative, then ``joint``."""
    read = sorted(i for i in held if i <= frontier)
    rank = {i: k - len(read) for k, i in enumerate(read)}
    rank.update(joint)
    return rank


def snapshot(model: Any, rank: dict[int, int] | None = None, canon: bool = True
             ) -> tuple[Any, ...]:
    """Canonical, hashable abstraction of the model's state (the explorer's node key).

    Exact: two models with equal snapshots accept the same futures. Sessions sharing a context
    pass a ``rank`` from :func:`session_ranks` over :func:`joint_ranks` of all of them.
    """
    if rank is None:
        rank = session_ranks(indices(model, canon), model.ctx.frontier,
                             joint_ranks([model], canon))
    return _compiled(type(model), canon, bool(model.ctx.product))[1](model, rank)

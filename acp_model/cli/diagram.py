"""``acp-model diagram``: the state machines and the reachable graph as pictures and text."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from acp_model.cli.common import EXIT_OK, UsageError, add_reading_option, readings_of
from acp_model.render import FORMATS, render_all

DIAGRAM_EPILOG = """Writes session-lifecycle.*, connection.* and reachable.* (png, svg, dot, mmd);
with --style docs, docs-*.mmd/.svg/.png under diagrams/docs (mermaid-cli needed for pictures).
Regenerate the checked-in diagrams with:  acp-model diagram --format all --out diagrams
and:  acp-model diagram --style docs
(tests/unit/test_render.py fails when diagrams/ drifts from the model).
example: acp-model diagram --format all --out diagrams"""



def cmd_diagram(args: argparse.Namespace, console: Console) -> int:
    readings = readings_of(args)
    formats: list[str] = []
    for part in ",".join(args.format or ["all"]).split(","):
        part = part.strip().lower()
        if part == "all":
            formats += FORMATS
        elif part == "mmd":
            formats.append("mermaid")
        elif part in FORMATS:
            formats.append(part)
        elif part:
            raise UsageError(f"unknown diagram format {part!r}; choose from "
                             f"{', '.join(FORMATS)} or all")
    # Each revision's diagrams in their own directory (the seed's are the checked-in ones).
    base = "diagrams/docs" if args.style == "docs" else "diagrams"
    out = Path(args.out or (base if readings.revision == "seed"
                            else f"{base}/{readings.revision}"))
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    if args.style == "docs":
        from acp_model.render.docs import DocsDrift, write_docs
        from acp_model.render.mermaid_cli import MermaidError, MermaidUnavailable

        if "dot" in formats:
            console.print("note: --style docs is Mermaid only; dot skipped")
        try:
            written = write_docs(out, tuple(dict.fromkeys(formats)), readings)
        except MermaidUnavailable as exc:
            raise UsageError(f"{exc} (or ask for --format mermaid only)") from None
        except (MermaidError, DocsDrift) as exc:
            raise UsageError(f"docs diagrams: {exc}") from None
    else:
        written = render_all(out, tuple(dict.fromkeys(formats)), readings)
    for p in written:
        console.print(f"wrote {p}")
    return EXIT_OK


def register(sub: Any) -> None:
    d = sub.add_parser(
        "diagram", help="draw the state machines and the reachable graph",
        description="Draw the session lifecycle and connection state machines (guards on the "
        "edges) and a reachable-configuration graph, as PNG and SVG (matplotlib, no Graphviz "
        "needed), Graphviz DOT and Mermaid stateDiagram-v2 text. Output is deterministic.",
        epilog=DIAGRAM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--format", action="append", metavar="FMT",
                   help="png, svg, dot, mermaid (or mmd), all; comma-separated or repeated "
                        "(default all)")
    d.add_argument("--style", choices=("engineer", "docs"), default="engineer",
                   help="engineer: every transition with its guards, for spec authors "
                        "(default); docs: one diagram per concern in the spec's words (states "
                        "as the text names them, wire messages on the edges, rule IDs in a "
                        "legend) and sequence diagrams of the text's flows, Mermaid rendered "
                        "with mermaid-cli")
    d.add_argument("--out", metavar="DIR",
                   help="output directory (default diagrams/, diagrams/<revision>/ for "
                        "another --spec)")
    add_reading_option(d)
    d.set_defaults(func=cmd_diagram)

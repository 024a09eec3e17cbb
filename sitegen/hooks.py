"""MkDocs hooks (``hooks:`` in mkdocs.yml): generated blocks and the repository's diagrams.

* ``<!-- generated: NAME -->`` in a page is replaced at build time (:mod:`sitegen.pages`);
* the diagrams stay where ``make diagrams`` writes them (``diagrams/``) and the notebooks in
  ``notebooks/``: the build serves those files under the same paths, and a page's link
  ``../diagrams/x.png`` (right when the page is read in the repository) becomes
  ``diagrams/x.png`` on the site. Nothing is copied into ``docs/``, so nothing can drift.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sitegen.pages import expand  # noqa: E402

SERVED = {"diagrams": (".png", ".svg", ".mmd", ".dot"), "notebooks": (".ipynb",)}
OUTSIDE = re.compile(r"\]\(\.\./(" + "|".join(SERVED) + r")/")


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for folder, suffixes in SERVED.items():
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in suffixes and ".ipynb_checkpoints" not in path.parts:
                files.append(File(path.relative_to(ROOT).as_posix(), src_dir=str(ROOT),
                                  dest_dir=config["site_dir"],
                                  use_directory_urls=config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = expand(markdown)
    depth = page.file.src_uri.count("/")
    prefix = "../" * depth
    return OUTSIDE.sub(lambda m: f"]({prefix}{m.group(1)}/", markdown)

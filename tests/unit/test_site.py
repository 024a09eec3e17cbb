"""The documentation site: `mkdocs build --strict` passes (a broken link, a missing page or a
missing anchor fails it), its generated pages hold what they are generated from, and in
Chromium the pages render, the search finds a rule, and a report's rule link lands on it."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_model.spec.rules import catalogue

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def build(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(config), "-d", str(out)], cwd=ROOT, capture_output=True,
                          text=True, env=ENV, timeout=300, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_site_builds_strict_with_every_generated_page(site: Path) -> None:
    rules = (site / "rules" / "index.html").read_text(encoding="utf-8")
    assert all(f'id="{r.id.lower().replace(".", "-")}"' in rules for r in catalogue())
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("check", "fuzz", "replay", "proxy", "merge", "explore", "diagram"):
        assert f'id="{command}"' in cli
    bench = (site / "benchmarks" / "index.html").read_text("utf-8")
    assert "<!-- generated:" not in bench
    found = sorted(p.stem for p in (ROOT / "benchmarks" / "results").glob("*.json"))
    assert [n for n in found if f'id="{n.lower().replace("_", "-")}"' not in bench
            and f'id="{n}"' not in bench] == []  # each results file has its section
    diagrams = (site / "diagrams" / "index.html").read_text(encoding="utf-8")
    assert 'src="docs/docs-turn.png"' in diagrams  # the page is diagrams/ itself
    assert (site / "diagrams" / "docs" / "docs-turn.png").is_file()  # served, not copied


def test_the_site_loads_nothing_from_other_hosts(site: Path) -> None:
    """No web font, script or stylesheet from a CDN: the site works offline, as the reports do."""
    loads = re.compile(r"<(?:script|img|link[^>]*stylesheet)[^>]*(?:src|href)=\"(?:https?:)?//")
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    assert [p.name for p in pages if loads.search(p.read_text(encoding="utf-8"))] == []


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with (docs / "index.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [a page nobody wrote](no-such-page.md).\n")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}").replace(
        "  - sitegen/hooks.py", f"  - {ROOT / 'sitegen' / 'hooks.py'}")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on loopback (the search index is fetched by a worker)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    from tests.services.browser import DevTools

    tools = DevTools(tmp_path / "profile")
    yield tools
    tools.close()


@pytest.mark.external  # Chromium
@pytest.mark.parametrize("page", ["", "getting-started/", "fuzzing/", "rules/", "cli/",
                                  "benchmarks/", "diagrams/", "design/"])
def test_pages_render_with_their_pictures(served: str, browser, page: str) -> None:
    browser.open(f"{served}/{page}")
    title = browser.wait_for("document.querySelector('article h1')?.textContent.trim()")
    assert title
    assert browser.js("document.querySelector('.md-nav') !== null")  # the theme rendered
    broken = browser.wait_for("[...document.images].every(i => i.complete) && "
                              "JSON.stringify([...document.images].filter(i => "
                              "i.naturalWidth === 0).map(i => i.src))")
    assert broken == "[]"


@pytest.mark.external  # Chromium
def test_the_search_box_finds_a_rule(served: str, browser, tmp_path: Path) -> None:
    browser.open(f"{served}/")
    browser.js("document.querySelector('label.md-header__button[for=__search]')?.click();"
               "document.querySelector('input.md-search__input').focus()")
    browser.type("CANCEL-07")
    # the first result of the whole query: each key typed searches anew, and on a loaded
    # machine the results for "cancel" can stand a while (a result's link carries the query
    # it answers in ``h``, as the search normalises it)
    first = browser.wait_for(
        "[...(document.querySelector('.md-search-result__item')?.querySelectorAll('a') ?? [])]"
        ".map(a => a.href).filter(h => new URL(h).searchParams.get('h') === 'cancel 07')"
        ".join(' ')")
    assert "/rules/" in first and "#cancel-07" in first  # the rule's entry first (its boost)
    browser.screenshot(tmp_path / "search.png")


@pytest.mark.external  # Chromium
def test_a_report_rule_link_lands_on_the_rule(served: str, browser, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_model.oracle.offline import check_records
    from acp_model.report.html import cases_from_violations, render_html

    monkeypatch.setenv("ACP_MODEL_DOCS_URL", served)
    records = [{"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 7, "result": {}}}]
    report = check_records(records)
    assert report["violations"]  # an answer to a request never sent
    page = tmp_path / "report.html"
    page.write_text(render_html(report, cases=cases_from_violations(report["violations"],
                                                                    records)), "utf-8")
    browser.open(page.as_uri())
    href = browser.js("document.querySelector('.case a.rule-doc').href")
    rule = report["violations"][0]["rule"]
    assert href.startswith(f"{served}/rules/#")
    browser.open(href)
    heading = browser.wait_for("document.getElementById(location.hash.slice(1))?.textContent")
    assert heading.startswith(rule)


@pytest.mark.external  # Chromium
def test_the_agents_grid_shows_every_column_at_1280_px(served: str, browser,
                                                       tmp_path: Path) -> None:
    """The docs site's agents page at 1280 px: the grid fits its column (no scrolling, no
    column past the right edge), every family is a column, and a failing cell is red and
    links to a section of the page."""
    from tests.services.browser import colour_share

    browser.open(f"{served}/agents/")
    fit = browser.wait_for("""(() => {
        const t = document.querySelector('table.acpm-grid');
        if (!t) return null;
        const heads = [...t.querySelectorAll('th')];
        return JSON.stringify({
            columns: heads.map(h => h.textContent.trim()),
            right: Math.max(...heads.map(h => h.getBoundingClientRect().right)),
            view: document.documentElement.clientWidth,
            article: document.querySelector('article').getBoundingClientRect().right,
            scroll: t.scrollWidth - t.clientWidth,
            spill: [...t.querySelectorAll('td, th')].filter(
                c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent),
            fail: [...t.querySelectorAll('td.acpm-fail a')].map(a => a.getAttribute('href')),
        });
    })()""")
    assert fit, "no grid on the agents page"
    grid = json.loads(fit)
    from acp_model.spec.families import families

    assert grid["columns"] == ["agent", "version", "ACP", "agent coverage",
                               *(f.title for f in families())]
    assert grid["view"] == 1280
    assert grid["right"] <= grid["article"] + 1 and grid["scroll"] <= 0, grid
    assert grid["spill"] == [], grid  # no word runs out of its cell
    assert grid["fail"] and all(h.startswith("#f-") for h in grid["fail"])
    assert browser.js(f"!!document.getElementById({grid['fail'][0][1:]!r})")
    shot = browser.screenshot(tmp_path / "agents-1280.png")
    assert colour_share(shot, (251, 213, 213), tolerance=8) > 0.001  # the failing cells

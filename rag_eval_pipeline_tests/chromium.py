"""Headless Chromium for the report tests: the DOM a real browser builds from a page, as a small tree;
and Chromium driven by Selenium for the pages a person works in (the annotation page).

Chromium and its driver are system packages (`apt-get install -y chromium chromium-driver`: Debian's
chromedriver matches its chromium); without them a test skips locally and fails in CI (the env var CI
set), so a CI image without them cannot pass by skipping. Selenium is given the driver's path, so its
Selenium Manager never looks for (or downloads) a driver or a browser.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The browser's path; skips the test without one, unless CI is set, where that is a failure."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is required in CI for the report tests: apt-get install -y chromium")
    pytest.skip("chromium is not installed (apt-get install -y chromium); set CI=1 to make this a failure")


def chromedriver() -> str:
    """Debian's chromedriver (package chromium-driver); skips without it, unless CI is set."""
    chromium()
    found = shutil.which("chromedriver")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(
            "chromedriver is required in CI for the browser tests: apt-get install -y chromium-driver"
        )
    pytest.skip(
        "chromedriver is not installed (apt-get install -y chromium-driver); set CI=1 to make this a failure"
    )


@contextmanager
def driven_chromium(work: Path, window: tuple[int, int] = (1280, 1000)) -> Iterator[Any]:
    """A headless Chromium driven by Selenium (a ``selenium.webdriver.Chrome``), closed afterwards."""
    driver_path = chromedriver()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never download anything
    options = webdriver.ChromeOptions()
    options.binary_location = chromium()
    for flag in (
        *FLAGS,
        f"--window-size={window[0]},{window[1]}",
        f"--user-data-dir={work / 'selenium-profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def walk(self) -> list[Node]:
        found = []
        for child in self.children:
            found.append(child)
            found += child.walk()
        return found

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Descendants with this tag whose attributes contain these values (``class_`` matches one
        class; other underscores stand for dashes: data_profile -> data-profile)."""
        wanted = {("class" if k == "class_" else k.replace("_", "-")): v for k, v in attrs.items()}

        def matches(node: Node) -> bool:
            for name, value in wanted.items():
                if name == "class":
                    if value not in node.attrs.get("class", "").split():
                        return False
                elif node.attrs.get(name) != value:
                    return False
            return tag is None or node.tag == tag

        return [n for n in self.walk() if matches(n)]

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"expected one <{tag} {attrs}>, found {len(found)}"
        return found[0]

    def text(self) -> str:
        return "".join(self.texts) + "".join(c.text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].texts.append(data)


def parse_dom(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def rendered_dom(page: Path, work: Path, window: tuple[int, int] | None = None) -> Node:
    """Load ``page`` in headless Chromium (in a window of ``window`` pixels, width and height) and parse
    the DOM it ends up with (after any script ran)."""
    size = [f"--window-size={window[0]},{window[1]}"] if window else []
    result = subprocess.run(
        [
            chromium(),
            *FLAGS,
            *size,
            f"--user-data-dir={work / 'chromium-profile'}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return parse_dom(result.stdout)


def page_measurements(page: Path, work: Path, width: int, script: str, height: int = 1000) -> Any:
    """What ``script`` (a JavaScript function body that returns JSON-able values) measures in ``page``
    laid out by headless Chromium in a window ``width`` px wide: sizes and boxes of the rendered page
    (getBoundingClientRect, scrollWidth), which the DOM alone does not tell. The script runs on a copy
    of the page, after layout, before its result is added to the document."""
    probe = work / f"measure-{width}-{page.name}"
    runner = (
        "<script>(() => { const result = JSON.stringify((() => {" + script + "})());"
        "const out = document.createElement('pre'); out.id = 'measurements'; out.hidden = true;"
        "out.textContent = result; document.body.appendChild(out); })();</script>"
    )
    html = page.read_text(encoding="utf-8")
    assert "</body>" in html, f"{page} has no </body> to run the measuring script before"
    probe.write_text(html.replace("</body>", runner + "</body>", 1), encoding="utf-8")
    dom = rendered_dom(probe, work, window=(width, height))
    return json.loads(dom.find("pre", id="measurements").text())


def screenshot(page: Path, png: Path, work: Path, width: int, height: int) -> Path:
    """A ``width`` x ``height`` PNG of ``page`` as headless Chromium shows it (to look at)."""
    result = subprocess.run(
        [
            chromium(),
            *FLAGS,
            "--hide-scrollbars",
            f"--user-data-dir={work / 'chromium-profile'}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and png.is_file(), result.stderr[-2000:]
    return png


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from the PNG header (IHDR)."""
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height

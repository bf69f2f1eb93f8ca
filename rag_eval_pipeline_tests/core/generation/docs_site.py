"""A small documentation site written like the real ones newcomers bring (MkDocs Material with
pymdown blocks): include directives, admonition blocks, HTML, and a release-notes page of one-line
entries that are mostly links. Written for the tests; no third-party text."""

from __future__ import annotations

import random
from pathlib import Path

RELEASE_NOTES = "# Release Notes\n\n## Latest Changes\n\n" + "".join(
    f"* ⬆️ Bump ruff from 0.{i}.1 to 0.{i}.2. PR [#{1000 + i}](https://github.com/example/webkit/pull/"
    f"{1000 + i}) by [@dependabot[bot]](https://github.com/apps/dependabot).\n"
    f"* 📝 Update docs for `Request` headers. PR [#{2000 + i}](https://github.com/example/webkit/pull/"
    f"{2000 + i}) by [@maintainer{i}](https://github.com/maintainer{i}).\n"
    for i in range(1, 25)
)

PAGES = {
    "tutorial/first-steps.md": """\
# First steps

The smallest application imports the framework, creates an app object and declares one path
operation that answers GET requests on the root path with a small JSON document.

{* ../../docs_src/first_steps/tutorial001.py hl[3] *}

Copy that into a file called main.py and start the development server with the command shown below;
it reloads the application whenever a source file changes, which is convenient while you write code.

/// tip

The development server listens on port 8000 of the loopback interface unless you pass another port.

///

Open the interactive documentation at /docs to try the operation in the browser: the page is
generated from the OpenAPI schema that the framework derives from your function signatures.
""",
    "tutorial/static-files.md": """\
# Static files

You can serve static files automatically from a directory with the StaticFiles application,
mounted under a sub-path such as /static, so images and style sheets need no handler of their own.

{* ../../docs_src/static_files/tutorial001.py hl[2,6:7] *}

/// note | Technical Details

The mounted application is independent: it has its own routes and does not appear in the OpenAPI
schema of the main application.

///

The first /static is the sub-path it is mounted on, the directory argument names the folder that holds
the files, and the name parameter lets templates build URLs to those files with url_for.
""",
    "deployment/https.md": """\
# About HTTPS

It is easy to assume that HTTPS is something that is just enabled or not, but it is far more complex
than that: certificates are issued for a domain, expire after about three months and must be renewed.

<div class="diagram">
<img src="/img/deployment/https/https01.svg">
</div>

The encryption of the connection happens at the TCP level, one layer below HTTP, so a single IP address
can only serve the certificate of one domain unless the TLS Server Name Indication extension is used.

!!! warning "Renewal"
    A certificate that is not renewed in time makes every browser refuse the connection.

A TLS termination proxy such as Traefik or Caddy usually obtains the certificates from Let's Encrypt
and renews them automatically, then forwards the decrypted requests to the application.
""",
    "advanced/settings.md": """\
# Settings and environment variables

Applications often need external settings: secret keys, database credentials, e-mail servers. Most
of them are variable and sensitive, so they are read from environment variables at startup.

{* ../../docs_src/settings/tutorial001.py hl[2,5:8,11] *}

The settings class validates each variable with its declared type: a port declared as an integer
refuses the string eighty, and a missing required variable stops the application before it serves.

/// warning

Never commit a .env file that holds production credentials to the repository of the project.

///

A cached dependency returns the same settings object for every request, so the environment is read
only once, and tests can override that dependency to run with other values.
""",
}


def write_docs_site(corpus: Path) -> Path:
    """The pages and the release notes under ``corpus`` (a workspace's corpus folder)."""
    for rel, text in {**PAGES, "release-notes.md": RELEASE_NOTES}.items():
        path = corpus / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return corpus


def markup_lines(text: str) -> list[str]:
    """The lines of ``text`` a reference must never hold: directives, block markers, HTML, link lists."""
    markers = ("{*", "///", "!!!", "<div", "</div", "<img", "](https://")
    return [line for line in text.splitlines() if any(m in line for m in markers)]


def _made_up_words() -> list[str]:
    rng = random.Random(0)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(3000)]


MADE_UP_WORDS = _made_up_words()


def made_up_prose(seed: int, chars: int) -> str:
    """About ``chars`` characters of paragraphs of sentences of made-up words, the same for a seed: prose
    with no sentence repeated (no boilerplate) and terms rare enough to score."""
    rng = random.Random(seed)
    words = MADE_UP_WORDS
    paragraphs = []
    size = 0
    while size < chars:
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 18))).capitalize() + "."
            for _ in range(rng.randint(2, 5))
        ]
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs)


def link_table(rows: int) -> str:
    """A navigation table: every cell a link."""
    lines = ["| Section | See also |", "| --- | --- |"]
    lines += [
        f"| [Topic number {i} in depth](topic{i}.md) | [Reference for {i}](ref{i}.md) |" for i in range(rows)
    ]
    return "\n".join(lines)


def changelog(versions: int) -> str:
    """Release notes without a link: version headings, entries citing pull requests and authors."""
    parts = []
    for v in range(versions, 0, -1):
        parts.append(
            f"## 1.{v}.0\n\n* Fix the scheduler losing a job when two workers start at once (#{400 + v}).\n"
            f"* Add a timeout to every outgoing request. PR #{500 + v} by @maintainer{v}.\n"
            f"* Bump the parser from 2.{v}.1 to 2.{v}.2.\n"
        )
    return "\n".join(parts)

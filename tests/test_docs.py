"""The documentation in ``docs/`` cannot drift from the code: every registered architecture
has a page whose options table is the one ``python -m opendcn.docs`` generates, every
relative link in ``docs/`` (and ``README.md``) resolves to a file and heading, and every
pointer from the code into ``docs/`` names a page and section that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from opendcn import docs
from opendcn.arch import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CODE_DIRS = ("python", "crates", "tests", "benchmarks", "benches", "examples")
CODE_EXT = {".py", ".rs", ".toml", ".md", ".txt"}

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
POINTER = re.compile(r"docs/[\w./-]+\.md(?:#[\w-]+)?")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    s = re.sub(r"`", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = _slug(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def _resolve(base: Path, target: str) -> str | None:
    """Why a link target does not resolve (None: it does)."""
    path, _, anchor = target.partition("#")
    page = (base.parent / path).resolve() if path else base
    if not page.exists():
        return f"no file {path}"
    if anchor and page.suffix == ".md" and anchor not in _anchors(page):
        return f"no heading #{anchor} in {page.relative_to(ROOT)}"
    return None


def _md_files() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def test_every_architecture_has_a_page() -> None:
    missing = [n for n in sorted(REGISTRY) if not (DOCS / "arch" / f"{n}.md").is_file()]
    assert not missing, f"no docs/arch/<name>.md for {missing}: run `python -m opendcn.docs` and write the page"


def test_no_page_for_an_unregistered_architecture() -> None:
    extra = sorted(p.stem for p in (DOCS / "arch").glob("*.md") if p.stem not in REGISTRY)
    assert not extra, f"docs/arch pages without a registered architecture: {extra}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_options_table_is_generated(name: str) -> None:
    page = DOCS / "arch" / f"{name}.md"
    text = page.read_text()
    assert docs.current_table(text) is not None, f"{page}: needs one {docs.BEGIN} ... {docs.END}"
    assert docs.current_table(text) == docs.options_table(REGISTRY[name]), (
        f"{page}: options table out of date; run `python -m opendcn.docs`")


def test_generator_is_idempotent_and_check_mode_agrees(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(DOCS, tmp_path / "docs")
    assert docs.refresh(tmp_path / "docs") == []
    assert docs.main(["--docs", str(tmp_path / "docs"), "--check"]) == 0
    # a stale table and a missing page are both found, and the generator repairs them
    page = tmp_path / "docs" / "arch" / "clos.md"
    page.write_text(docs.replace_table(page.read_text(), "| stale |"))
    (tmp_path / "docs" / "arch" / "sirius.md").unlink()
    assert docs.stale(tmp_path / "docs") == ["clos", "sirius"]
    assert docs.main(["--docs", str(tmp_path / "docs"), "--check"]) == 1
    assert docs.refresh(tmp_path / "docs") == ["clos", "sirius"]
    assert docs.stale(tmp_path / "docs") == []


@pytest.mark.parametrize("page", _md_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    bad = []
    fence = False
    for i, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto:
                continue
            why = _resolve(page, target)
            if why:
                bad.append(f"{page.relative_to(ROOT)}:{i}: {target} ({why})")
    assert not bad, "\n".join(bad)


def _code_files() -> list[Path]:
    out = []
    for d in CODE_DIRS:
        out += [p for p in (ROOT / d).rglob("*") if p.suffix in CODE_EXT and p.is_file()
                and "target" not in p.parts and ".venv" not in p.parts]
    return sorted(out)


def test_code_pointers_into_docs_resolve() -> None:
    bad = []
    for f in _code_files():
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for target in POINTER.findall(line):
                why = _resolve(ROOT / "x", target)
                if why:
                    bad.append(f"{f.relative_to(ROOT)}:{i}: {target} ({why})")
    assert not bad, "\n".join(bad)


def test_no_pointer_to_documents_outside_the_repository() -> None:
    # the design notes these names stood for are docs/ now
    names = ("ALGORITHMS" + ".md", "CONTRACT" + ".md", "ALGORITHMS" + " §")
    bad = [f"{f.relative_to(ROOT)}:{i}" for f in _code_files()
           for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
           if any(n in line for n in names)]
    assert not bad, "references to files outside the repository: " + ", ".join(bad)


# ---------------------------------------------------------------------------------------
# the README: short, the two commands, an example that works; commands in the docs that
# name files and measuring kernels that exist
# ---------------------------------------------------------------------------------------
README = ROOT / "README.md"
REPO_FILE = re.compile(r"(?<![\w/.-])((?:benches|benchmarks|examples|tests|python|crates)/[\w./-]*\w\.(?:pyi|py|rs|toml|md|htsim))(?!\w)")
FLOOR_BIN = re.compile(r"-p opendcn-floors --bin (\w+)")


def _fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_is_short_and_shows_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200, "README.md: keep it to about 200 lines; details go to docs/"
    blocks = "".join(_fenced(text, ""))
    for cmd in ("make demo", "make test"):
        assert re.search(rf"^{cmd}\b", blocks, flags=re.M), f"README.md: no `{cmd}` in a command block"
    assert "docs/performance.md" in text


def test_readme_python_example_runs_and_delivers(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _fenced(README.read_text(), "python")
    assert len(blocks) == 1, "README.md: one Python example"
    assert len(blocks[0].strip().splitlines()) <= 12
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)
    s = ns["result"].summary
    assert s["invariants"]["ok"] and s["bytes"]["delivered"] > 0 and s["flows"]["completed"] > 0
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("page", _md_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_named_in_the_docs_exist(page: Path) -> None:
    missing = sorted({m for m in REPO_FILE.findall(page.read_text()) if not (ROOT / m).exists()})
    # an Opera trace may live outside the package (OPENDCN_OPERA_TRACES)
    missing = [m for m in missing if not m.endswith(".htsim")]
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_measuring_kernels_are_built_only_when_asked_for() -> None:
    import tomllib

    ws = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    assert "benches/floors" in ws["members"] and "benches/floors" not in ws["default-members"]
    assert not list((ROOT / "crates" / "opendcn-core").glob("examples/*.rs")), (
        "measuring kernels belong in benches/floors (cargo test builds a crate's examples)")
    bins = {b["name"]: b["path"] for b in
            tomllib.loads((ROOT / "benches" / "floors" / "Cargo.toml").read_text())["bin"]}
    assert all((ROOT / "benches" / "floors" / p).is_file() for p in bins.values())
    named = {n for f in [*_md_files(), *(ROOT / "benches").rglob("*.rs")] for n in FLOOR_BIN.findall(f.read_text())}
    assert named and named <= set(bins), f"docs name kernels that do not exist: {sorted(named - set(bins))}"
    assert set(bins) <= named, f"kernels without a documented command: {sorted(set(bins) - named)}"

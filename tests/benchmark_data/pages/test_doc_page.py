"""The generated documentation pages share one command line: --out and --root, then where it wrote."""

from pathlib import Path

import pytest

from benchmark_data.pages.doc_page import page_main


def test_page_main_writes_where_asked_from_the_root_given(tmp_path, capsys):
    calls = []

    def write_doc(path: Path, root) -> Path:
        calls.append((path, root))
        path.write_text("page\n")
        return path

    out = tmp_path / "page.md"
    assert page_main(write_doc, "docs/x.md", ["--out", str(out), "--root", "/data/frozen"]) == 0
    assert calls == [(out, "/data/frozen")] and out.read_text() == "page\n"
    assert capsys.readouterr().out == f"wrote {out}\n"


def test_page_main_defaults_to_the_page_and_the_package_data(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    calls = []
    page_main(lambda path, root: calls.append((path, root)) or path, "docs/x.md", [])
    assert calls == [(Path("docs/x.md"), None)]


def test_page_main_refuses_an_unknown_option_by_name(capsys):
    with pytest.raises(SystemExit) as exit_info:
        page_main(lambda path, root: path, "docs/x.md", ["--outt", "y.md"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --outt y.md" in capsys.readouterr().err

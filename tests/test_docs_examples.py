"""Every code example of the documentation site runs as written and prints what the page shows.

The conventions are those of :mod:`docs_examples` (stated for writers in docs/contributing-docs.md).
One test per page; pages are found at collection, so a new page is tested without a change here.
"""

import pytest
from docs_examples import DOCS, ExampleFailed, PageRunner, blocks, doc_pages, output_matches, page_marks, run_page


def _page_param(page):
    # Every page may run the CLI end to end and train critics (pages of other writers do not declare
    # it), so each page's test is marked both; a page adds ``slow`` with <!-- docs-test: slow -->.
    marks = [pytest.mark.integration, pytest.mark.train]
    marks += [getattr(pytest.mark, mark) for mark in sorted(page_marks(page.read_text()) - {"train"})]
    return pytest.param(page, marks=marks, id=str(page.relative_to(DOCS)))


@pytest.mark.parametrize("page", [_page_param(page) for page in doc_pages()])
def test_page_examples_run_and_print_what_they_show(page, tmp_path, monkeypatch):
    run_page(page, tmp_path, monkeypatch)


# The runner itself, on small pages written here (no CLI run, so no marks).

def _run(text, tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return PageRunner(page, tmp_path).run()


def test_python_output_is_checked(tmp_path, monkeypatch):
    good = "```python\nprint(1 + 1)\n```\n\n```text\n2\n```\n"
    assert _run(good, tmp_path, monkeypatch) == 1
    with pytest.raises(ExampleFailed, match="printed"):
        _run(good.replace("2\n```\n", "3\n```\n"), tmp_path, monkeypatch)


def test_files_are_written_and_shared_within_a_page(tmp_path, monkeypatch):
    text = ('```python title="helper.py"\nVALUE = 41\n```\n\n'
            "```python\nimport helper\nx = helper.VALUE + 1\n```\n\n```python\nprint(x)\n```\n\n```text\n42\n```\n"
            "\n```console\n$ cat helper.py\nVALUE = 41\n$ python helper.py\n```\n")
    assert _run(text, tmp_path, monkeypatch) == 4


def test_skip_directive_and_unknown_commands(tmp_path, monkeypatch):
    assert _run("<!-- docs-test: skip -->\n```bash\npip install miaudit\n```\n", tmp_path, monkeypatch) == 0
    with pytest.raises(ExampleFailed, match="mark other blocks"):
        _run("```bash\npip install miaudit\n```\n", tmp_path, monkeypatch)


def test_a_failing_example_names_its_page_and_line(tmp_path, monkeypatch):
    with pytest.raises(ExampleFailed, match=r"page.md:3: the python block raised ZeroDivisionError"):
        _run("text\n\n```python\n1 / 0\n```\n", tmp_path, monkeypatch)


def test_ellipsis_durations_and_trailing_space():
    assert output_matches("took ... seconds\n", "took 1.25 seconds   \n\n")
    assert output_matches("0.1 s; stopped\n", "0.25 s; stopped\n")  # durations vary
    assert not output_matches("ε ≥ 1.05\n", "ε ≥ 1.06\n")
    assert not output_matches("1 of 4 rounds\n", "2 of 4 rounds\n")


def test_file_comments_python_c_and_stderr(tmp_path, monkeypatch):
    text = ("```python\n# helper.py\nVALUE = 3\n```\n\n"
            "```console\n$ python -c \"import helper, sys; print(helper.VALUE); print('warn', file=sys.stderr)\"\n"
            "warn\n3\n```\n")
    assert _run(text, tmp_path, monkeypatch) == 2
    assert (tmp_path / "helper.py").read_text() == "# helper.py\nVALUE = 3\n"


def test_page_marks_and_block_parsing():
    text = "<!-- docs-test: train -->\n\n```console\n$ miaudit a \\\n  b\nout\n```\n"
    assert page_marks(text) == {"train"}
    (block,) = blocks(text)
    assert (block.language, block.line, block.skip) == ("console", 3, False)


def test_every_page_is_under_docs():
    assert doc_pages() and all(DOCS in page.parents for page in doc_pages())

"""nbval checks numbers and text, never figure bytes (the repository's ``conftest.py``).

Each case writes a two-cell notebook whose committed outputs differ from what its code produces,
then runs nbval on it in a separate pytest process, with and without the repository's conftest.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import nbformat
import pytest

from mechaudit.paths import REPO_ROOT

# A cell that emits a figure the way myst-nb's glue records one, plus a plain image output.
FIGURE_CELL = (
    "from IPython.display import display\n"
    "display({'application/papermill.record/image/png': 'AAAA', 'text/plain': '<Figure>'}, raw=True)\n"
    "display({'image/png': 'BBBB', 'text/plain': '<Figure>'}, raw=True)"
)
NUMBER_CELL = "display({'application/papermill.record/text/plain': '37.7', 'text/plain': '37.7'}, raw=True)"


def _notebook(path, png: str, number: str) -> None:
    """Write a notebook whose stored outputs hold ``png`` as figure bytes and ``number`` as glued text."""
    nb = nbformat.v4.new_notebook()
    figure = nbformat.v4.new_code_cell(FIGURE_CELL)
    figure.outputs = [
        nbformat.v4.new_output("display_data", data={
            "application/papermill.record/image/png": png, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
    ]
    glued = nbformat.v4.new_code_cell(NUMBER_CELL)
    glued.outputs = [nbformat.v4.new_output("display_data", data={
        "application/papermill.record/text/plain": number, "text/plain": number})]
    figure.execution_count, glued.execution_count = 1, 2
    nb.cells = [figure, glued]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _nbval(folder, with_conftest: bool) -> subprocess.CompletedProcess:
    if with_conftest:
        shutil.copy(REPO_ROOT / "conftest.py", folder / "conftest.py")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "-q", "--rootdir", str(folder), str(folder / "nb.ipynb")],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.parametrize("with_conftest, png, number, failing", [
    (True, "ZZZZ", "37.7", []),           # other figure bytes, same numbers: passes
    (True, "AAAA", "37.6", ["Cell 1"]),   # a glued number differs: its cell fails
    (False, "ZZZZ", "37.7", ["Cell 0"]),  # without the repository's rule nbval compares glued figure bytes
])
def test_nbval_ignores_figure_bytes_but_not_glued_numbers(tmp_path, with_conftest, png, number, failing):
    _notebook(tmp_path / "nb.ipynb", png=png, number=number)
    proc = _nbval(tmp_path, with_conftest)
    failed = sorted(line.split("::")[1].split(" -")[0] for line in proc.stdout.splitlines()
                    if line.startswith("FAILED nb.ipynb::"))
    assert failed == failing, proc.stdout[-3000:]
    assert (proc.returncode == 0) is not failing
    if failing:
        assert "Cell outputs differ" in proc.stdout

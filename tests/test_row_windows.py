"""Workers find their own rows: byte ranges counted apart and added up number every row as
indexing the whole file does, and a window reads exactly those rows.

The reference is the whole-file reader (JsonlRows), whose rows are checked elsewhere; the
counts below are written by hand from how the file is made.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prompt_compiler.data.sources import JsonlRows
from prompt_compiler.data.windows import (
    JsonlWindow,
    byte_ranges,
    count_range,
    line_ranges,
    row_windows,
    windowed,
)
from prompt_compiler.errors import DataError


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    """1,000 rows after a BOM; a blank and a whitespace line after every 97th row; row 500
    malformed; lines of different lengths."""
    out = ["\ufeff"]
    for i in range(1000):
        out.append('{"q": "oops' if i == 500 else json.dumps({"q": "x" * (i % 13), "i": i}))
        out.append("\n")
        if i % 97 == 0:
            out.append("\n  \n")
    path = tmp_path / "test.jsonl"
    path.write_text("".join(out), encoding="utf-8")
    return path


@pytest.mark.parametrize("size", [1, 97, 1000, 4096, 1 << 20])
def test_counted_ranges_number_the_rows_as_the_whole_file_does(rows_file: Path,
                                                               size: int) -> None:
    counted = [count_range(str(rows_file), lo, hi) for lo, hi in byte_ranges(rows_file, size)]
    lines = line_ranges(str(rows_file), counted)
    assert lines.total == 1000
    assert sum(c[2] for c in counted) == 1000 + 2 * 11  # rows 0, 97, ..., 970: 11 of them
    whole = JsonlRows(rows_file)
    for window in (range(0, 7), range(96, 99), range(488, 499), range(990, 1000)):
        part = JsonlWindow(rows_file, lines, window)
        assert len(part) == 1000
        assert [part[i] for i in window] == [whole[i] for i in window]
        assert list(part.iter_range(window.start, window.stop)) == list(
            whole.iter_range(window.start, window.stop))
        assert part[0] == whole[0] == {"q": "", "i": 0}
    with pytest.raises(DataError, match="outside the rows this process reads"):
        JsonlWindow(rows_file, lines, range(10, 20))[30]


def test_a_malformed_row_in_a_window_is_named_as_the_whole_file_names_it(
        rows_file: Path) -> None:
    lines = line_ranges(str(rows_file), [count_range(str(rows_file), lo, hi)
                                         for lo, hi in byte_ranges(rows_file, 333)])
    part = JsonlWindow(rows_file, lines, range(495, 505))
    with pytest.raises(DataError) as got:
        list(part.iter_range(495, 505))
    with pytest.raises(DataError) as expected:
        list(JsonlRows(rows_file).iter_range(495, 505))
    assert str(got.value) == str(expected.value)
    # by hand: row 500 is on line 501, after two blank lines each for rows 0, 97, ..., 485
    assert f"{rows_file}: line 513" in str(got.value)


def test_row_windows_open_only_the_named_file_as_a_window(rows_file: Path,
                                                         tmp_path: Path) -> None:
    lines = line_ranges(str(rows_file), [count_range(str(rows_file), 0, 1 << 30)])
    assert windowed(rows_file) is None
    with row_windows({lines.file: (lines, range(3, 5))}):
        found = windowed(rows_file)
        assert isinstance(found, JsonlWindow) and found[4] == {"q": "xxxx", "i": 4}
        assert windowed(tmp_path / "other.jsonl") is None
    assert windowed(rows_file) is None


def test_a_range_cut_inside_a_long_line_before_short_ones(tmp_path: Path) -> None:
    # the line cut by a range boundary is longer than the lines after it, and the file goes
    # on for more than a read-ahead: the count must read exactly its rest (by hand: 1 + 40,000
    # rows, the long one first)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"q": "y" * 300}) + "\n" + "{}\n" * 40_000)
    for size in (150, 301, 4096):
        counted = [count_range(str(path), lo, hi) for lo, hi in byte_ranges(path, size)]
        assert line_ranges(str(path), counted).total == 40_001, size
        assert sum(c[2] for c in counted) == 40_001

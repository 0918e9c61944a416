"""Dataset rows: lookup order, readers, and malformed data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.config import DatasetConfig, load_config
from prompt_compiler.data.sources import (
    LoadedRows,
    attach_rows,
    load_splits,
    read_csv,
    read_hf_disk,
    read_json,
    read_jsonl,
)
from prompt_compiler.errors import DataError

DATA = Path(__file__).parent / "data"
OC = DATA / "opencompass_configs"
DATA_DIR = OC / "data"

GSM8K_TEST = [
    {"question": "What is 2 + 3? #te0", "answer": "5"},
    {"question": "Braces {x} and </E> #te1", "answer": "7"},
]
GSM8K_TRAIN = [{"question": "Café #tr0", "answer": "1"}]
MRPC = [
    {"sentence1": "a #te0", "sentence2": "b", "label": 0},
    {"sentence1": "c #te1", "sentence2": "d", "label": 1},
]


def dataset(tmp_path: Path, abbr: str = "demo", **spec: Any) -> DatasetConfig:
    """A dataset as if defined in ``tmp_path/cfg.yaml``."""
    full = {"abbr": abbr, "reader_cfg": {}, "infer_cfg": {}, **spec}
    return DatasetConfig(abbr, str(tmp_path / "cfg.yaml"), "datasets[0]", full)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- lookup order -----------------------------------------------------------------------


def test_opencompass_loader_rows_come_from_data_dir() -> None:
    (gsm8k,) = load_config(OC / "configs" / "datasets" / "gsm8k" / "gsm8k_gen.py").datasets
    rows = load_splits(gsm8k, DATA_DIR)
    # DIR/<abbr>/<split>.jsonl -> splits, in sorted file order
    expected = {"test": GSM8K_TEST, "train": GSM8K_TRAIN}
    assert rows == LoadedRows(None, expected, str(DATA_DIR / "gsm8k"))
    assert list(rows.splits["test"][0]) == ["question", "answer"]  # key order kept


def test_path_is_read_relative_to_the_config() -> None:
    suite = load_config(OC / "configs" / "eval_demo.py")
    rows = load_splits(suite.datasets[1], None)
    assert (rows.rows, rows.splits) == (MRPC, None)


def test_inline_rows_win_over_path_and_data_dir(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", '{"q": "file"}\n')
    write(tmp_path / "dd" / "demo.jsonl", '{"q": "data dir"}\n')
    ds = dataset(tmp_path, rows=[{"q": "inline"}], path="d.jsonl")
    assert load_splits(ds, tmp_path / "dd") == LoadedRows([{"q": "inline"}], None, "inline")
    splits = dataset(tmp_path, splits={"train": [{"q": 1}], "test": []})
    assert load_splits(splits).splits == {"train": [{"q": 1}], "test": []}


def test_path_wins_over_data_dir_and_missing_path_falls_back(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", '{"q": "file"}\n')
    write(tmp_path / "dd" / "demo.jsonl", '{"q": "data dir"}\n')
    assert load_splits(dataset(tmp_path, path="d.jsonl"), tmp_path / "dd").rows == [{"q": "file"}]
    fallback = load_splits(dataset(tmp_path, path="absent.jsonl"), tmp_path / "dd")
    assert fallback.rows == [{"q": "data dir"}]
    assert fallback.origin == str(tmp_path / "dd" / "demo.jsonl")


def test_loader_class_ignores_path(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", '{"q": "file"}\n')
    write(tmp_path / "dd" / "demo" / "test.jsonl", '{"q": "dir"}\n')
    ds = dataset(tmp_path, type="GSM8KDataset", path="d.jsonl")
    assert load_splits(ds, tmp_path / "dd").splits == {"test": [{"q": "dir"}]}


def test_data_files_give_named_splits(tmp_path: Path) -> None:
    write(tmp_path / "tr.jsonl", '{"q": "t"}\n')
    write(tmp_path / "te.csv", "q\nx\n")
    ds = dataset(tmp_path, data_files={"train": "tr.jsonl", "test": "te.csv"})
    assert load_splits(ds).splits == {"train": [{"q": "t"}], "test": [{"q": "x"}]}


def test_folder_path_without_type_reads_split_files(tmp_path: Path) -> None:
    write(tmp_path / "rows" / "train.jsonl", '{"q": 0}\n')
    write(tmp_path / "rows" / "dev.jsonl", '{"q": 1}\n')
    rows = load_splits(dataset(tmp_path, path="rows"))
    assert list(rows.splits) == ["dev", "train"]


def test_attach_rows_returns_an_inline_copy(tmp_path: Path) -> None:
    write(tmp_path / "d.json", json.dumps({"train": [{"q": 0}], "test": [{"q": 1}]}))
    ds = dataset(tmp_path, type="json", path="d.json")
    attached = attach_rows(ds)
    assert attached.spec["splits"] == {"train": [{"q": 0}], "test": [{"q": 1}]}
    assert "splits" not in ds.spec and attached.abbr == ds.abbr
    assert load_splits(attached).origin == "inline"


# --- readers ----------------------------------------------------------------------------


def test_read_jsonl_keeps_order_and_skips_blank_lines(tmp_path: Path) -> None:
    file = write(tmp_path / "d.jsonl", '{"b": 1, "a": [1, {"x": null}]}\n\n{"a": "é"}\n')
    rows = read_jsonl(file)
    assert rows == [{"b": 1, "a": [1, {"x": None}]}, {"a": "é"}]
    assert list(rows[0]) == ["b", "a"]


def test_read_json_list_and_splits(tmp_path: Path) -> None:
    assert read_json(write(tmp_path / "l.json", '[{"q": 1}]')) == [{"q": 1}]
    assert read_json(write(tmp_path / "s.json", '{"dev": [{"q": 1}], "test": []}')) == {
        "dev": [{"q": 1}], "test": [],
    }


def test_read_csv_keeps_strings_and_quoted_newlines() -> None:
    assert read_csv(DATA / "yaml_configs" / "data" / "qa.csv") == [
        {"q": "What is 2 + 3?", "a": "5"},
        {"q": "Line one\nLine two", "a": "x"},
    ]


def test_yaml_suite_rows() -> None:
    suite = load_config(DATA / "yaml_configs" / "suite.yaml")
    assert load_splits(suite.datasets[1]).rows == MRPC
    assert load_splits(suite.datasets[2]).rows[0] == {"q": "What is 2 + 3?", "a": "5"}


# --- bad data ---------------------------------------------------------------------------


def _raises(fn: Any, *args: Any) -> str:
    with pytest.raises(DataError) as info:
        fn(*args)
    return str(info.value)


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    file = write(tmp_path / "d.jsonl", '{"q": 1}\n{"q": 2,}\n')
    message = _raises(read_jsonl, file)
    assert message.startswith(f"{file}: line 2: malformed JSON")


def test_non_object_jsonl_row(tmp_path: Path) -> None:
    file = write(tmp_path / "d.jsonl", '{"q": 1}\n\n[1, 2]\n')
    message = _raises(read_jsonl, file)
    assert message.startswith(f"{file}: line 3 (row 1): a row must be a JSON object, got list")


def test_non_object_json_row(tmp_path: Path) -> None:
    file = write(tmp_path / "d.json", '{"test": [{"q": 1}, "oops"]}')
    message = _raises(read_json, file)
    assert f"{file}: split 'test': row 1 is a str, expected an object" in message


def test_json_of_the_wrong_shape(tmp_path: Path) -> None:
    file = write(tmp_path / "d.json", '"just a string"')
    assert f"{file}: expected a list of row objects" in _raises(read_json, file)


def test_json_syntax_error_names_the_line(tmp_path: Path) -> None:
    file = write(tmp_path / "d.json", '[\n  {"q": 1},\n  {"q": }\n]')
    assert _raises(read_json, file).startswith(f"{file}: line 3, column 9: malformed JSON")


def test_csv_ragged_row(tmp_path: Path) -> None:
    file = write(tmp_path / "d.csv", "q,a\nx,1\ny,2,extra\n")
    message = _raises(read_csv, file)
    assert message.startswith(f"{file}: line 3 (row 1): 3 fields, but the header has 2 (q, a)")


def test_csv_empty_and_duplicated_columns(tmp_path: Path) -> None:
    empty = write(tmp_path / "e.csv", "")
    assert f"{empty}: empty CSV file" in _raises(read_csv, empty)
    dup = write(tmp_path / "d.csv", "q,a,q\n1,2,3\n")
    assert f"{dup}: line 1: duplicated column(s) q" in _raises(read_csv, dup)


def test_not_utf8(tmp_path: Path) -> None:
    file = tmp_path / "d.jsonl"
    file.write_bytes(b'{"q": "\xff"}\n')
    assert _raises(read_jsonl, file).startswith(f"{file}: line 1: not UTF-8 text")


def test_missing_rows_list_every_path_tried(tmp_path: Path) -> None:
    ds = dataset(tmp_path, abbr="gsm8k", path="nope.jsonl")
    message = _raises(load_splits, ds, tmp_path / "dd")
    config = tmp_path / "cfg.yaml"
    assert message.startswith(f"{config}: dataset 'gsm8k', at datasets[0].path: path "
                              "'nope.jsonl' does not exist (looked for ")
    for tried in (
        tmp_path / "nope.jsonl",
        Path.cwd() / "nope.jsonl",
        tmp_path / "dd" / "gsm8k" / "<split>.jsonl",
        tmp_path / "dd" / "gsm8k.jsonl",
    ):
        assert str(tried) in message


def test_missing_loader_data_names_where_opencompass_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COMPASS_DATA_CACHE", raising=False)
    ds = dataset(tmp_path, abbr="gsm8k", type="GSM8KDataset", path="opencompass/gsm8k")
    message = _raises(load_splits, ds, None)
    assert message == (
        f"{tmp_path / 'cfg.yaml'}: dataset 'gsm8k', at datasets[0]: no data at "
        f"{tmp_path / 'data/gsm8k'} (nor at {tmp_path / 'home/.cache/opencompass/data/gsm8k'}): "
        "OpenCompass would download 'opencompass/gsm8k' there (from its dataset URLs, or the "
        "hub DATASET_SOURCE names); this project never downloads (hint: unpack OpenCompass's "
        "data (the OpenCompassData zip) in the working folder, or set COMPASS_DATA_CACHE to "
        "the folder holding its data/ folder; or pass --data-dir DIR holding "
        "DIR/gsm8k/<split>.jsonl)")


def test_bad_file_in_a_dataset_names_config_and_dataset(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", "{oops\n")
    message = _raises(load_splits, dataset(tmp_path, path="d.jsonl"), None)
    assert message.startswith(f"{tmp_path / 'cfg.yaml'}: dataset 'demo'")
    assert f"{tmp_path / 'd.jsonl'}: line 1: malformed JSON" in message


def test_inline_rows_must_be_objects(tmp_path: Path) -> None:
    message = _raises(load_splits, dataset(tmp_path, rows=[{"q": 1}, 7]), None)
    assert "at datasets[0].rows" in message and "row 1 is a int" in message
    message = _raises(load_splits, dataset(tmp_path, splits=[{"q": 1}]), None)
    assert "at datasets[0].splits" in message


def test_unknown_suffix_without_type(tmp_path: Path) -> None:
    write(tmp_path / "d.xlsx", "")
    message = _raises(load_splits, dataset(tmp_path, path="d.xlsx"), None)
    assert "cannot tell how to read this file" in message and "jsonl, json, csv" in message


def test_hf_reader_names_the_missing_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails as if not installed
    message = _raises(read_hf_disk, tmp_path)
    assert str(tmp_path) in message and "compile-prompts[hf]" in message

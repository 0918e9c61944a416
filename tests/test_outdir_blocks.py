"""BlockFile (prompt_compiler/emit/outdir.py): blocks and appended part files, written and
hashed by a helper thread; the bytes and the sha256 are those of the blocks in order."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler.emit.outdir import BlockFile, write_blocks
from prompt_compiler.errors import OutputError

BLOCKS = st.lists(st.one_of(st.binary(max_size=5000).map(lambda b: ("block", b)),
                            st.binary(max_size=70_000).map(lambda b: ("part", b))), max_size=12)


@settings(max_examples=40, deadline=None)
@given(items=BLOCKS)
def test_blocks_and_parts_are_written_in_order_with_their_hash(tmp_path_factory, items):
    folder = tmp_path_factory.mktemp("blocks")
    out = BlockFile(folder / "sub" / "all.jsonl", shown="OUT/all.jsonl")
    parts = []
    for k, (kind, data) in enumerate(items):
        if kind == "block":
            out.write(data)
        else:
            part = folder / f"part{k}"
            part.write_bytes(data)
            parts.append(part)
            out.append(part)
    digest = out.close()
    want = b"".join(data for _, data in items)
    assert (folder / "sub" / "all.jsonl").read_bytes() == want
    assert digest == hashlib.sha256(want).hexdigest()
    assert not any(p.exists() for p in parts)  # appended parts are deleted


def test_a_full_disk_is_an_output_error_naming_the_file(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    with pytest.raises(OutputError, match="cannot write OUT/x.jsonl: No space left"):
        write_blocks(Path("/dev/full"), (b"x" * 100_000 for _ in range(20)), shown="OUT/x.jsonl")


def test_an_error_of_the_producer_passes_through(tmp_path):
    def blocks():
        yield b"line\n"
        raise KeyError("producer")

    with pytest.raises(KeyError, match="producer"):
        write_blocks(tmp_path / "x.jsonl", blocks(), shown="x")

"""The viewer's cuts (shared by ``--show``, ``diff`` and the HTML report)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from prompt_compiler.inspection.viewer import segments, visible


def test_segments_by_hand() -> None:
    text = "a \t<|im_end|> \r\nb  \n<s>  "
    assert [(text[a:b], kind) for a, b, kind in segments(text)] == [
        ("a ", "text"),
        ("\t", "tab"),
        ("<|im_end|>", "special"),
        (" ", "text"),
        ("\r", "cr"),
        ("\n", "newline"),
        ("b", "text"),
        ("  ", "trailing"),
        ("\n", "newline"),
        ("<s>", "special"),
        ("  ", "trailing"),
    ]
    assert visible(text) == "a →⟦<|im_end|>⟧ ␍↵\nb··↵\n⟦<s>⟧··␃"


PIECES = st.sampled_from(
    [
        "a",
        "b",
        " ",
        "  ",
        "\t",
        "\r",
        "\n",
        "<",
        "|",
        ">",
        "<|im_start|>",
        "<s>",
        "[INST]",
        "</s>",
        "x y",
    ]
)


@given(st.lists(PIECES, max_size=25).map("".join))
def test_segments_tile_the_text(text: str) -> None:
    segs = segments(text)
    assert all(a < b for a, b, _ in segs)
    assert [a for a, _, _ in segs] == [0, *(b for _, b, _ in segs[:-1])][: len(segs)]
    assert "".join(text[a:b] for a, b, _ in segs) == text
    for a, b, kind in segs:
        piece = text[a:b]
        if kind == "trailing":
            assert set(piece) == {" "} and text[b : b + 1] in ("", "\n")
        if kind in ("newline", "tab", "cr"):
            assert set(piece) == {{"newline": "\n", "tab": "\t", "cr": "\r"}[kind]}


def test_visible_shows_section_markers_of_an_unparsed_prompt_list() -> None:
    from prompt_compiler import Marker, PromptList, RoleItem

    pl = PromptList([Marker("round", "begin"), RoleItem.of("HUMAN", "hi\n"),
                     Marker("round", "end")])
    assert visible(pl) == ('[item] {"section": "round", "pos": "begin"}\n'
                           "[HUMAN] hi↵\n␃\n"
                           '[item] {"section": "round", "pos": "end"}')

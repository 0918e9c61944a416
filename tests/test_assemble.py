"""Inferencer assembly through ``Compiler.compile`` (spec §1, §6, §7; defects D5, D6).

Token counts use the whitespace counter (``len(text.split())``), as in the reference cases.
"""

from __future__ import annotations

import copy

import pytest

from prompt_compiler import Compiler, MissingFieldError, UnsupportedError

MODES = pytest.mark.parametrize("mode", ["opencompass", "default"])

TRAIN = [{"q": "t0", "a": "a0"}, {"q": "t1", "a": "a1"}, {"q": "t2", "a": "a2"}]
NO_META_LM = {"abbr": "base", "parser": "lm", "meta_template": None}
CHAT_META = {"round": [{"role": "HUMAN", "begin": "<H>", "end": "</H>\n"},
                       {"role": "BOT", "begin": "<B>", "end": "</B>\n", "generate": True}]}


def gen_dataset(fix_ids=(0, 1, 2), test=({"q": "test", "a": "gold"},)):
    return {
        "abbr": "tiny",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {q} A: {a}"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {q} A: {a}",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": list(fix_ids)},
            "inferencer": {"type": "GenInferencer", "max_out_len": 10},
        },
        "splits": {"train": copy.deepcopy(TRAIN), "test": [dict(r) for r in test]},
    }


def lm(max_seq_len=None, **kw):
    return {**NO_META_LM, "max_seq_len": max_seq_len, **kw}


# -- gen -------------------------------------------------------------------------------------------


@MODES
def test_gen_without_limit_keeps_all_examples(mode):
    out = Compiler(mode=mode).compile(gen_dataset(), lm())
    assert out.kind == "gen" and out.dataset == "tiny" and out.model == "base"
    (rec,) = out.records
    # str ICE: '\n'.join(examples) + '\n' (FixK's separator and eos); answer masked
    assert rec.prompt == "Q: t0 A: a0\nQ: t1 A: a1\nQ: t2 A: a2\nQ: test A: "
    assert rec.ice_ids == rec.retrieved_ids == (0, 1, 2)
    assert rec.token_len == 15
    assert out.retrieved == ((0, 1, 2),)


@MODES
@pytest.mark.parametrize(("limit", "ids", "prompt", "tokens"), [
    (15, (0, 1, 2), "Q: t0 A: a0\nQ: t1 A: a1\nQ: t2 A: a2\nQ: test A: ", 15),
    (14, (0, 1), "Q: t0 A: a0\nQ: t1 A: a1\nQ: test A: ", 11),
    (10, (0,), "Q: t0 A: a0\nQ: test A: ", 7),
    # still too long with zero shots: kept; the empty ICE is the eos '\n'
    (2, (), "\nQ: test A: ", 3),
])
def test_gen_truncation_drops_examples_from_the_end(mode, limit, ids, prompt, tokens):
    (rec,) = Compiler(mode=mode).compile(gen_dataset(), lm(limit)).records
    assert rec.ice_ids == ids
    assert rec.retrieved_ids == (0, 1, 2)
    assert rec.prompt == prompt
    assert rec.token_len == tokens


def test_gen_spec_fill_example_both_modes():
    ds = gen_dataset(test=({"q": "{a} {x}", "x": "X", "a": "gold"},))
    ds["infer_cfg"]["retriever"] = {"type": "ZeroRetriever"}
    ds["infer_cfg"]["prompt_template"]["template"] = "</E>{q}|{a}"
    # test row columns in order q, x, a (+ subdivision, idx); a is masked to ''
    # compat: q -> '{a} {x}|{a}', x -> '{a} X|{a}', a -> ' X|'
    (compat,) = Compiler(mode="opencompass").compile(ds, lm()).records
    assert compat.prompt == " X|"
    (default,) = Compiler().compile(ds, lm()).records
    assert default.prompt == "{a} {x}|"


@MODES
def test_subdivision_and_idx_columns(mode):
    ds = gen_dataset(test=({"q": "x", "a": "g"}, {"q": "y", "a": "g"}))
    ds["infer_cfg"]["retriever"] = {"type": "ZeroRetriever"}
    ds["infer_cfg"]["prompt_template"]["template"] = "</E>{idx}|{subdivision}|{q}"
    out = Compiler(mode=mode).compile(ds, lm())
    # ZeroRetriever's ICE is '' (its eos)
    assert [r.prompt for r in out.records] == ["0|tiny_test|x", "1|tiny_test|y"]
    one_split = {k: v for k, v in ds.items() if k != "splits"}
    one_split["rows"] = [{"q": "x", "a": "g"}]
    assert [r.prompt for r in Compiler(mode=mode).compile(one_split, lm()).records] == ["0|tiny|x"]


@MODES
def test_gen_with_meta_template_and_hf_chat(mode):
    ds = gen_dataset(fix_ids=(0,))
    qa = [{"role": "HUMAN", "prompt": "Q: {q}"}, {"role": "BOT", "prompt": "{a}"}]
    ds["infer_cfg"]["ice_template"]["template"] = {"round": qa}
    ds["infer_cfg"]["prompt_template"]["template"] = {"begin": "</E>", "round": qa}
    chat_lm = {"abbr": "c", "parser": "lm", "meta_template": CHAT_META}
    (rec,) = Compiler(mode=mode).compile(ds, chat_lm).records
    assert rec.prompt == "<H>Q: t0</H>\n<B>a0</B>\n<H>Q: test</H>\n<B>"
    hf_chat = {"abbr": "h", "parser": "hf_chat", "meta_template": None}
    (chat,) = Compiler(mode=mode).compile(ds, hf_chat).records
    assert chat.rendered == [{"role": "HUMAN", "prompt": "Q: t0\n"}, {"role": "BOT", "prompt": "a0"},
                             {"role": "HUMAN", "prompt": "Q: test\n"}]
    assert chat.prompt == chat.chat_messages  # what the model receives: OpenAI messages
    assert chat.chat_messages == [{"role": "user", "content": "Q: t0\n"},
                                  {"role": "assistant", "content": "a0"},
                                  {"role": "user", "content": "Q: test\n"}]


@MODES
def test_omitted_prompt_template_uses_ice_template_with_begin(mode):
    # SPEC 4.6: the ice template's begin ('</E>') is dropped for the examples and kept
    # (and replaced by the ICE) for the prompt; a meta ICE gets no separators (SPEC 6.2)
    ds = gen_dataset(fix_ids=(0, 1))
    del ds["infer_cfg"]["prompt_template"]
    ds["infer_cfg"]["ice_template"] = {
        "type": "PromptTemplate", "ice_token": "</E>",
        "template": {"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "{q}"},
                                                {"role": "BOT", "prompt": "{a}"}]}}
    chat_lm = {"abbr": "c", "parser": "lm", "meta_template": CHAT_META}
    (rec,) = Compiler(mode=mode).compile(ds, chat_lm).records
    assert rec.prompt == "<H>t0</H>\n<B>a0</B>\n<H>t1</H>\n<B>a1</B>\n<H>test</H>\n<B>"
    (plain,) = Compiler(mode=mode).compile(ds, lm()).records
    # no meta: non-empty texts joined by '\n' (the masked BOT answer is empty)
    assert plain.prompt == "t0\na0\nt1\na1\ntest"


@MODES
def test_gen_field_replace_token(mode):
    ds = gen_dataset(fix_ids=())
    ds["infer_cfg"]["inferencer"]["gen_field_replace_token"] = "<?>"
    (rec,) = Compiler(mode=mode).compile(ds, lm()).records
    # FixK with no ids: ICE = eos '\n'
    assert rec.prompt == "\nQ: test A: <?>"


# -- PPL ------------------------------------------------------------------------------------------


def ppl_dataset(label_order=("yes", "no")):
    templates = {"yes": "</E>Q: {q} A: yes", "no": "</E>Q: {q} A: no no no no no"}
    return {
        "abbr": "pplset",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {q} A: {a}"},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>",
                                "template": {k: templates[k] for k in label_order}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1]},
            "inferencer": {"type": "PPLInferencer"},
        },
        "splits": {"train": copy.deepcopy(TRAIN), "test": [{"q": "test", "a": "yes"}]},
    }


def per_label(out):
    return {r.label: r for r in out.records}


def test_ppl_compat_earlier_label_keeps_more_shots():
    # ICE with [0,1] = 8 words. yes: 8 + 4 = 12 <= 14 keeps both; no: 8 + 8 = 16 > 14 -> [0]
    out = Compiler(mode="opencompass").compile(ppl_dataset(("yes", "no")), lm(14))
    assert out.labels == ("yes", "no")
    recs = per_label(out)
    assert recs["yes"].ice_ids == (0, 1)
    assert recs["yes"].prompt == "Q: t0 A: a0\nQ: t1 A: a1\nQ: test A: yes"
    assert recs["yes"].token_len == 12
    assert recs["no"].ice_ids == (0,)
    assert recs["no"].prompt == "Q: t0 A: a0\nQ: test A: no no no no no"
    assert recs["no"].token_len == 12
    assert all(r.retrieved_ids == (0, 1) for r in out.records)


def test_ppl_compat_truncation_carries_over_to_later_labels():
    # no first: truncated to [0]; yes then starts from [0] and never gets shot 1 back
    out = Compiler(mode="opencompass").compile(ppl_dataset(("no", "yes")), lm(14))
    assert out.labels == ("no", "yes")
    recs = per_label(out)
    assert recs["no"].ice_ids == (0,)
    assert recs["yes"].ice_ids == (0,)
    assert recs["yes"].prompt == "Q: t0 A: a0\nQ: test A: yes"


@pytest.mark.parametrize("order", [("yes", "no"), ("no", "yes")])
def test_ppl_default_fits_once_per_row_d5(order):
    out = Compiler().compile(ppl_dataset(order), lm(14))
    recs = per_label(out)
    assert recs["yes"].ice_ids == recs["no"].ice_ids == (0,)
    assert recs["yes"].prompt == "Q: t0 A: a0\nQ: test A: yes"
    assert recs["no"].prompt == "Q: t0 A: a0\nQ: test A: no no no no no"
    assert all(r.retrieved_ids == (0, 1) for r in out.records)


@MODES
def test_ppl_prompt_is_not_masked(mode):
    ds = ppl_dataset()
    ds["infer_cfg"]["prompt_template"]["template"] = {"yes": "</E>{q}={a}", "no": "</E>{q}!={a}"}
    recs = per_label(Compiler(mode=mode).compile(ds, lm()))
    assert recs["yes"].prompt == "Q: t0 A: a0\nQ: t1 A: a1\ntest=yes"
    assert recs["no"].prompt == "Q: t0 A: a0\nQ: t1 A: a1\ntest!=yes"


def labels_dataset(answers):
    return {
        "abbr": "lbl",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "prompt_template": {"type": "PromptTemplate", "template": "Q: {q} A: {a}"},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": "PPLInferencer"},
        },
        "rows": [{"q": f"q{i}", "a": a} for i, a in enumerate(answers)],
    }


def test_ppl_labels_from_data_first_appearance_default_d6():
    out = Compiler().compile(labels_dataset(["b", "a", "b", "c"]), lm())
    assert out.labels == ("b", "a", "c")
    # one record per (row, label); a str template ignores the label
    assert len(out.records) == 12
    assert [r.label for r in out.records if r.index == 0] == ["b", "a", "c"]
    assert {r.prompt for r in out.records if r.index == 1} == {"Q: q1 A: a"}


def test_ppl_labels_from_data_numbers():
    # D6: first appearance; same equality as set (1 == 1.0 == True)
    assert Compiler().compile(labels_dataset([3, 1, 2, 1.0, True]), lm()).labels == (3, 1, 2)
    # compat: list(set(...)); small ints iterate in ascending order in CPython's set
    compat = Compiler(mode="opencompass").compile(labels_dataset([3, 1, 2, 1]), lm())
    assert compat.labels == (1, 2, 3)


# -- CLP ------------------------------------------------------------------------------------------


@MODES
def test_clp_with_api_model_is_unsupported(mode):
    ds = gen_dataset()
    ds["infer_cfg"]["inferencer"] = {"type": "CLPInferencer"}
    with pytest.raises(UnsupportedError) as info:
        Compiler(mode=mode).compile(ds, {"abbr": "gpt", "parser": "api", "meta_template": None})
    assert info.value.reference[0] == "ValueError"
    assert isinstance(info.value, ValueError)


@MODES
def test_clp_with_lm_model_builds_gen_prompt(mode):
    ds = gen_dataset(test=({"q": "test", "a": "gold", "choices": ["A", "B"]},))
    ds["infer_cfg"]["inferencer"] = {"type": "CLPInferencer"}
    # 15 tokens + 1 must fit in 16
    (rec,) = Compiler(mode=mode).compile(ds, lm(16)).records
    assert rec.mode == "clp"
    assert rec.prompt == "Q: t0 A: a0\nQ: t1 A: a1\nQ: t2 A: a2\nQ: test A: "
    (short,) = Compiler(mode=mode).compile(ds, lm(12)).records
    assert short.ice_ids == (0, 1)  # 11 + 1 <= 12
    assert short.prompt == "Q: t0 A: a0\nQ: t1 A: a1\nQ: test A: "


@pytest.mark.parametrize("mode", ["default", "opencompass"])
def test_clp_rows_without_choices_fail_before_any_prompt(mode):
    # OpenCompass reads the options from the first test row's 'choices' first thing.
    ds = gen_dataset()
    ds["infer_cfg"]["inferencer"] = {"type": "CLPInferencer"}
    with pytest.raises(MissingFieldError) as info:
        Compiler(mode=mode).compile(ds, lm())
    assert info.value.reference == ("KeyError", "'choices'")
    assert "'choices' column" in str(info.value) and "row 0" in str(info.value)


# -- Chat -----------------------------------------------------------------------------------------


def chat_dataset(infer_mode):
    return {
        "abbr": "chat",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "prompt_template": {"type": "PromptTemplate",
                                "template": {"round": [{"role": "HUMAN", "prompt": "{q}"}]}},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": "ChatInferencer", "infer_mode": infer_mode},
        },
        "rows": [{"q": ["q1", "q2"], "a": ["a1", "a2"]}],
    }


CHAT = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}]


@MODES
@pytest.mark.parametrize(("infer_mode", "prompts"), [
    ("last", ["<H>q1</H>\n<B>a1</B>\n<H>q2</H>\n<B>"]),
    ("every", ["<H>q1</H>\n<B>", "<H>q1</H>\n<B>REPLY</B>\n<H>q2</H>\n<B>"]),
    ("every_with_gt", ["<H>q1</H>\n<B>", "<H>q1</H>\n<B>a1</B>\n<H>q2</H>\n<B>"]),
])
def test_chat_modes_lm(mode, infer_mode, prompts):
    out = Compiler(mode=mode).compile(chat_dataset(infer_mode), {"abbr": "c", "parser": "lm",
                                                                 "meta_template": CHAT_META},
                                      reply=lambda _prompt: "REPLY")
    assert out.kind == "chat" and out.infer_mode == infer_mode
    assert [r.prompt for r in out.records] == prompts
    assert [r.turn for r in out.records] == list(range(len(prompts)))
    assert all(r.extra["chat"] == CHAT for r in out.records)


@MODES
def test_chat_last_api(mode):
    meta = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}]}
    (rec,) = Compiler(mode=mode).compile(chat_dataset("last"), {"abbr": "g", "parser": "api",
                                                                "meta_template": meta}).records
    assert rec.rendered == [{"role": "HUMAN", "prompt": "q1"}, {"role": "BOT", "prompt": "a1"},
                            {"role": "HUMAN", "prompt": "q2"}]
    assert rec.prompt == [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                          {"role": "user", "content": "q2"}]


@MODES
def test_chat_without_meta_joins_contents(mode):
    (rec,) = Compiler(mode=mode).compile(chat_dataset("last"), lm()).records
    assert rec.prompt == "q1\na1\nq2"


# -- determinism ----------------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize("make", [
    lambda: (gen_dataset(), lm(10)),
    lambda: (ppl_dataset(), lm(14)),
    lambda: (labels_dataset(["b", "a", "b"]), lm()),
    lambda: (chat_dataset("every_with_gt"),
             {"abbr": "c", "parser": "lm", "meta_template": CHAT_META}),
])
def test_compile_is_deterministic(mode, make):
    ds, model = make()
    first = Compiler(mode=mode).compile(ds, model)
    compiler = Compiler(mode=mode)
    second = compiler.compile(*make())
    third = compiler.compile(*make())
    assert first.records == second.records == third.records
    assert first.labels == second.labels


@MODES
def test_compile_does_not_mutate_inputs(mode):
    ds, model = ppl_dataset(), lm(14)
    before = copy.deepcopy((ds, model))
    Compiler(mode=mode).compile(ds, model)
    assert (ds, model) == before

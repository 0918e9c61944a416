"""Tests for the model meta template library (meta_templates/*.yaml and its loader)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.errors import ConfigError, MetaTemplateError, RegistryError
from prompt_compiler.model.meta_library import (
    ENV_VAR,
    MetaTemplateLibrary,
    ModelTemplate,
    default_library,
    list_model_templates,
    load_model_template,
    load_template_file,
    normalize_name,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted((REPO / "prompt_compiler" / "meta_templates").glob("*.yaml"))

# The families the library promises to ship.
REQUIRED = [
    "internlm-chat", "internlm2-chat", "llama-2-chat", "llama-3-instruct", "qwen-chat",
    "qwen2.5-instruct", "qwen3", "chatglm2", "chatglm3", "glm-4", "baichuan2-chat",
    "mistral-instruct", "yi-chat", "deepseek-chat", "gemma", "phi-3", "openai-api",
]


# --------------------------------------------------------------------------- helpers


def render_lm(meta: Mapping[str, Any], rounds: list[dict[str, str]], *,
              begin: list[tuple[str, str]] = (), mode: str = "gen",  # type: ignore[assignment]
              fallback: Mapping[str, str] | None = None) -> str:
    """Hand-apply a meta template the OpenCompass LM way (a small subset, for expectations).

    ``begin`` items render as ``role.begin + prompt + role.end``; each round renders the meta
    ``round`` in order; the generating role of the last round emits only its ``begin`` in gen
    mode, and then nothing else (not even ``meta.end``) follows.
    """
    table = {r["role"]: r for r in [*meta["round"], *meta.get("reserved_roles", ())]
             if isinstance(r, Mapping)}
    fallback = fallback or {}
    out = meta.get("begin", "")
    for role, prompt in begin:
        spec = table.get(role) or table[fallback[role]]
        out += spec.get("begin", "") + prompt + spec.get("end", "")
    for i, items in enumerate(rounds):
        last = i == len(rounds) - 1
        for slot in meta["round"]:
            if isinstance(slot, str):
                out += slot
                continue
            out += slot.get("begin", "")
            if mode == "gen" and last and slot.get("generate"):
                return out
            out += items.get(slot["role"], "") + slot.get("end", "")
    return out + meta.get("end", "")


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = """\
# Source: a test
name: {name}
description: test template
renderer: lm
aliases: [{aliases}]
meta_template:
  round:
    - {{role: HUMAN, begin: "<u>", end: "</u>"}}
    - {{role: BOT, begin: "<b>", end: "</b>", generate: true}}
"""


@pytest.fixture
def fresh_default(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Clears the cached default library before and after the test."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    default_library.cache_clear()
    yield monkeypatch
    default_library.cache_clear()


# --------------------------------------------------------------------------- shipped files


def test_shipped_folder_has_the_required_families() -> None:
    names = default_library().names()
    missing = [name for name in REQUIRED if name not in names]
    assert missing == []
    assert len(SHIPPED) == len(names)  # one file per template, nothing skipped


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_file_loads_and_is_documented(path: Path) -> None:
    template = load_template_file(path)
    assert template.name == path.stem
    assert template.description and "\n" not in template.description
    assert template.source, "each file names the source of its format in a '# Source:' comment"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# {template.name} — ")
    # An LM template must say how generation starts; an API one needs api_role everywhere.
    roles = [r for r in template.meta_template["round"] if isinstance(r, Mapping)]
    assert sum(1 for r in roles if r.get("generate")) == 1
    if template.renderer != "lm":
        assert all("api_role" in r for r in roles)


def test_names_and_aliases_resolve_ignoring_case_and_underscores() -> None:
    lib = default_library()
    assert lib.get("Llama_3_Instruct").name == "llama-3-instruct"
    assert lib.get("LLAMA3-INSTRUCT").name == "llama-3-instruct"
    assert lib.get(" internlm2_chat_7b ").name == "internlm2-chat"
    assert lib.get("gpt-4").name == "openai-api"
    assert lib["qwen2.5"].name == "qwen2.5-instruct"
    assert "Yi_34B_Chat" in lib and "yi-35b-chat" not in lib and 3 not in lib
    assert normalize_name(" Qwen2_5-Instruct ") == "qwen2-5-instruct"
    assert [t.name for t in list_model_templates()] == lib.names()
    assert load_model_template("baichuan2_7b_chat").name == "baichuan2-chat"


def test_unknown_name_suggests_close_matches_and_lists_available() -> None:
    with pytest.raises(RegistryError) as info:
        load_model_template("llama3-instrct")
    err = info.value
    assert isinstance(err, LookupError)
    assert err.message == ("unknown model template 'llama3-instrct'; "
                           "did you mean 'llama-3-instruct'?")
    assert err.hint is not None
    assert err.hint.startswith("available model templates: baichuan2-chat, chatglm2, ")
    assert "qwen3" in err.hint and ENV_VAR in err.hint


def test_unknown_name_without_close_match() -> None:
    with pytest.raises(RegistryError) as info:
        default_library().get("zzzzzz")
    assert info.value.message == "unknown model template 'zzzzzz'"
    assert "did you mean" not in str(info.value)


def test_templates_are_read_only_and_copy_out_as_plain_dicts() -> None:
    template = load_model_template("llama-3-instruct")
    with pytest.raises(TypeError):
        template.meta_template["begin"] = "x"  # type: ignore[index]
    assert isinstance(template.meta_template["round"], tuple)
    copy = template.meta_template_dict()
    assert isinstance(copy["round"], list) and isinstance(copy["round"][0], dict)
    copy["round"][0]["begin"] = "changed"
    assert template.meta_template["round"][0]["begin"].startswith("<|start_header_id|>user")
    assert template.role_names() == ("HUMAN", "BOT", "SYSTEM")
    assert template.prompter_dict()["stop_words"] == ["<|eot_id|>", "<|end_of_text|>"]
    assert repr(template).startswith("ModelTemplate(name='llama-3-instruct', renderer='lm'")


# --------------------------------------------------------------------------- token strings


def test_family_token_strings() -> None:
    """Spot checks of special tokens, hand-checked against each family's published format."""
    def meta(name: str) -> dict[str, Any]:
        return load_model_template(name).meta_template_dict()

    assert meta("internlm-chat")["round"][1] == {
        "role": "BOT", "begin": "<|Bot|>:", "end": "<eoa>\n", "generate": True}
    assert meta("qwen-chat")["round"][0]["begin"] == "\n<|im_start|>user\n"
    assert meta("mistral-instruct")["begin"] == "<s>"
    assert meta("chatglm2")["round"][0]["begin"] == "[Round 1]\n\n问："
    assert meta("baichuan2-chat")["round"][0] == {"role": "HUMAN", "begin": "<reserved_106>"}
    assert meta("deepseek-chat")["round"][1]["end"] == "<｜end▁of▁sentence｜>"
    assert meta("glm-4")["eos_token_id"] == [151329, 151336, 151338]
    assert "SYSTEM" not in load_model_template("gemma").role_names()
    qwen25 = load_model_template("qwen2.5-instruct")
    assert qwen25.default_system == ("You are Qwen, created by Alibaba Cloud. "
                                     "You are a helpful assistant.")
    assert qwen25.meta_template["begin"] == (
        f"<|im_start|>system\n{qwen25.default_system}<|im_end|>\n")


def test_llama3_renders_a_few_shot_dialogue() -> None:
    meta = load_model_template("llama-3-instruct").meta_template
    text = render_lm(meta, [{"HUMAN": "1+1?", "BOT": "2"}, {"HUMAN": "2+2?", "BOT": "4"}],
                     begin=[("SYSTEM", "Be brief.")])
    assert text == (
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n1+1?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n2<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_internlm_chat_renders_ppl_and_gen() -> None:
    meta = load_model_template("internlm-chat").meta_template
    rounds = [{"HUMAN": "Q", "BOT": "A"}]
    assert render_lm(meta, rounds, mode="ppl") == "<|User|>:Q\n<|Bot|>:A<eoa>\n"
    assert render_lm(meta, rounds, mode="gen") == "<|User|>:Q\n<|Bot|>:"


def test_internlm2_with_system_renders_an_empty_system_slot_per_round() -> None:
    meta = load_model_template("internlm2-chat-with-system").meta_template
    assert render_lm(meta, [{"HUMAN": "Q"}]) == (
        "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n")


def test_chatglm2_repeats_round_one() -> None:
    meta = load_model_template("chatglm2").meta_template
    assert render_lm(meta, [{"HUMAN": "甲", "BOT": "乙"}, {"HUMAN": "丙"}]) == (
        "[Round 1]\n\n问：甲\n\n答：乙\n\n[Round 1]\n\n问：丙\n\n答：")


def test_mistral_begin_and_round_ends() -> None:
    meta = load_model_template("mistral-instruct").meta_template
    assert render_lm(meta, [{"HUMAN": "a", "BOT": "b"}, {"HUMAN": "c"}]) == (
        "<s>[INST] a [/INST]b</s> [INST] c [/INST]")


def test_deepseek_chat_system_text_is_raw() -> None:
    meta = load_model_template("deepseek-chat").meta_template
    assert render_lm(meta, [{"HUMAN": "hi"}], begin=[("SYSTEM", "Sys.")]) == (
        "Sys.<｜User｜>hi<｜Assistant｜>")


def test_gemma_system_goes_through_fallback_as_a_user_turn() -> None:
    meta = load_model_template("gemma").meta_template
    text = render_lm(meta, [{"HUMAN": "hi"}], begin=[("SYSTEM", "Sys.")],
                     fallback={"SYSTEM": "HUMAN"})
    assert text == ("<start_of_turn>user\nSys.<end_of_turn>\n"
                    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n")


def test_echo_shows_begin_and_end_in_ppl_mode() -> None:
    meta = load_model_template("echo").meta_template
    assert render_lm(meta, [{"HUMAN": "q"}], mode="ppl") == (
        "<BEGIN><HUMAN>q</HUMAN>\n<BOT></BOT>\n<END>")


# --------------------------------------------------------------------------- reference corpus

# Model names of the OpenCompass conformance cases -> the template that must match them.
OPENCOMPASS_MODELS = {
    "internlm_chat_7b": "internlm-chat",
    "internlm2_chat_7b_with_system": "internlm2-chat-with-system",
    "llama2_7b_chat": "llama-2-chat",
    "llama3_70b_instruct": "llama-3-instruct",
    "qwen_7b_chat": "qwen-chat",
    "chatglm2_6b": "chatglm2",
    "baichuan2_7b_chat": "baichuan2-chat",
    "mistral_7b_instruct_v0_1": "mistral-instruct",
    "yi_34b_chat": "yi-chat",
    "deepseek_7b_chat": "deepseek-llm-chat",
    "gpt_4": "openai-api",
    "llama3_1_8b_instruct_api": "openai-api",
}


def test_round_begin_end_match_opencompass_meta_templates(shared_dir: Path) -> None:
    seen: set[str] = set()
    for case in sorted((shared_dir / "conformance/opencompass/cases").glob("*.json")):
        model = json.loads(case.read_text(encoding="utf-8"))["model"]
        if model["name"] not in OPENCOMPASS_MODELS:
            continue
        seen.add(model["name"])
        ours = load_model_template(OPENCOMPASS_MODELS[model["name"]]).meta_template_dict()
        theirs = model["meta_template"]
        for key in ("round", "begin", "end"):
            assert ours.get(key) == theirs.get(key), (case.name, key)
        for role in theirs.get("reserved_roles", []):  # ours may declare more, never differ
            assert role in ours["reserved_roles"], (case.name, role)
    assert seen, "no matching cases found in the corpus"


def test_hf_chat_default_is_opencompass_default() -> None:
    template = load_model_template("hf-chat-default")
    assert template.renderer == "hf_chat"
    assert template.meta_template_dict() == {"round": [
        {"role": "HUMAN", "api_role": "HUMAN"},
        {"role": "SYSTEM", "api_role": "HUMAN"},
        {"role": "BOT", "api_role": "BOT", "generate": True},
    ]}


# Peer ids (HF chat templates applied by transformers) -> template, and what the meta template
# cannot reproduce: a BOS prefix that the tokenizer adds on encode instead.
HF_CHAT_MATCHES = {
    "trl_llama3_system_genprompt": ("llama-3-instruct", "<|begin_of_text|>"),
    "trl_qwen3_system_genprompt": ("qwen3", ""),
    "trl_phi3_system_genprompt": ("phi-3", ""),
    "trl_qwen2_5_system_genprompt": ("qwen2.5-instruct", ""),
}


def _messages_to_rounds(messages: list[dict[str, str]]) -> tuple[list[tuple[str, str]],
                                                                 list[dict[str, str]]]:
    roles = {"system": "SYSTEM", "user": "HUMAN", "assistant": "BOT"}
    begin: list[tuple[str, str]] = []
    rounds: list[dict[str, str]] = []
    for message in messages:
        role = roles[message["role"]]
        if role == "SYSTEM":
            begin.append((role, message["content"]))
        elif role == "HUMAN":
            rounds.append({role: message["content"]})
        else:
            rounds[-1][role] = message["content"]
    return begin, rounds


def test_meta_templates_reproduce_hf_chat_templates(shared_dir: Path) -> None:
    peers = shared_dir / "conformance/peers"
    cases = {c["id"]: c for c in json.loads(
        (peers / "cases/hf_chat/templates.json").read_text(encoding="utf-8"))}
    golden = {r["id"]: r for r in json.loads(
        (peers / "golden/hf_chat/templates.json").read_text(encoding="utf-8"))["results"]}
    for case_id, (name, bos) in HF_CHAT_MATCHES.items():
        template = load_model_template(name)
        begin, rounds = _messages_to_rounds(cases[case_id]["messages"])
        meta = template.meta_template_dict()
        if template.default_system is not None and begin:
            meta.pop("begin")  # the chat template replaces its default system turn
        assert bos + render_lm(meta, rounds, begin=begin) == golden[case_id]["output"], case_id


def test_qwen25_default_system_leads_when_the_prompt_has_none(shared_dir: Path) -> None:
    golden = json.loads((shared_dir / "conformance/peers/golden/hf_chat/templates.json")
                        .read_text(encoding="utf-8"))["results"]
    expected = next(r["output"] for r in golden
                    if r["id"] == "trl_qwen2_5_nosystem_no_genprompt")
    meta = load_model_template("qwen2.5-instruct").meta_template
    text = render_lm(meta, [{"HUMAN": "What is 1+1?", "BOT": "2"}, {"HUMAN": "And 2+2?"}])
    # The chat template without a generation prompt stops after the user turn.
    assert text == expected + "<|im_start|>assistant\n"


def test_prompter_slots_are_lazyllm_model_tokens(shared_dir: Path) -> None:
    cases = json.loads((shared_dir / "conformance/peers/cases/lazyllm/model_tokens.json")
                       .read_text(encoding="utf-8"))
    by_id = {c["id"]: c.get("model_configs") for c in cases}
    expected = {
        "internlm2-chat": by_id["chat_model_internlm2_history_pairs__str"],
        "llama-3-instruct": by_id["chat_model_meta-llama-3_history_pairs__dict"],
        "glm-4": by_id["chat_model_glm-4_history_pairs__str"],
        "qwen-chat": by_id["chat_model_qwen_tools_fc_prompt__dict"],
    }
    for name, slots in expected.items():
        assert load_model_template(name).prompter_dict() == slots, name


def test_prompter_slots_not_in_the_corpus() -> None:
    # Hand-checked against LazyLLM 1.4.0 model_mapping ("llama-2" and "deepseek" groups).
    llama2 = load_model_template("llama-2-chat").prompter_dict()
    assert (llama2["sos"], llama2["soa"], llama2["eos"], llama2["eoa"], llama2["separator"]) == (
        "[INST] <<SYS>>\n", " [/INST] ", "\n<</SYS>>\n\n", "</s>", "<s>[INST] ")
    assert llama2["system"].startswith("\nYou are a helpful, respectful and honest assistant.")
    assert "soh" not in llama2
    deepseek = load_model_template("deepseek-chat").prompter_dict()
    assert deepseek == {
        "sos": "<｜begin▁of▁sentence｜>", "soh": "<｜User｜>", "soa": "<｜Assistant｜>",
        "eos": "", "eoh": "", "eoa": "<｜end▁of▁sentence｜>",
        "stop_words": ["<｜end▁of▁sentence｜>"], "system": "",
    }


# --------------------------------------------------------------------------- loading & errors


def test_folders_env_var_and_paths(tmp_path: Path, fresh_default: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "extra"
    write(extra, "my-model.yaml", MINIMAL.format(name="my-model", aliases="my_alias"))
    fresh_default.setenv(ENV_VAR, str(extra))
    lib = default_library()
    assert lib.get("MY_ALIAS").name == "my-model"
    assert "llama-3-instruct" in lib  # the shipped ones are still there
    template = load_model_template(str(extra / "my-model.yaml"))
    assert template.source == "a test" and template.path == extra / "my-model.yaml"
    assert load_model_template(extra / "my-model.yaml").name == "my-model"


def test_json_files_load(tmp_path: Path) -> None:
    data = {"name": "j", "source": "a json test", "renderer": "api", "meta_template": {
        "round": [{"role": "HUMAN", "api_role": "HUMAN"},
                  {"role": "BOT", "api_role": "BOT", "generate": True}]}}
    path = write(tmp_path, "j.json", json.dumps(data))
    template = MetaTemplateLibrary.from_folders(tmp_path).get("j")
    assert template.renderer == "api" and template.source == "a json test"
    assert template.path == path and template.aliases == () and template.prompter == {}


def test_duplicate_names_across_folders_raise(tmp_path: Path) -> None:
    write(tmp_path / "a", "x.yaml", MINIMAL.format(name="dup", aliases="one"))
    second = write(tmp_path / "b", "y.yaml", MINIMAL.format(name="other", aliases="DUP"))
    with pytest.raises(MetaTemplateError) as info:
        MetaTemplateLibrary.from_folders(tmp_path / "a", tmp_path / "b")
    err = info.value
    assert err.config_path == str(second) and err.key_path == "aliases[0]"
    first = tmp_path / "a" / "x.yaml"
    assert err.message == f"'DUP' is already used by model template 'dup' in {first}"


def test_duplicate_within_with_templates(tmp_path: Path) -> None:
    lib = MetaTemplateLibrary.from_folders(
        write(tmp_path, "a.yaml", MINIMAL.format(name="a", aliases="")).parent)
    clash = load_template_file(
        write(tmp_path / "o", "a.yaml", MINIMAL.format(name="A", aliases="")))
    with pytest.raises(MetaTemplateError, match="'A' is already used by model template 'a'"):
        lib.with_templates(clash)
    assert len(lib) == 1


def test_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model template folder does not exist"):
        MetaTemplateLibrary.from_folders(tmp_path / "nope")


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "name: x\nmeta_template: {round: [\n")
    with pytest.raises(ConfigError) as info:
        load_template_file(path)
    assert info.value.config_path == str(path)
    assert info.value.message.startswith("invalid YAML at line 3")
    assert not isinstance(info.value, MetaTemplateError)


def test_python_object_tags_are_rejected_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(tmp_path, "evil.yaml",
                 f"name: !!python/object/apply:os.system ['touch {marker}']\n"
                 "meta_template: {round: [{role: HUMAN}]}\n")
    with pytest.raises(ConfigError) as info:
        load_template_file(path)
    assert info.value.message.startswith("not plain YAML at line 1, column 7: could not determine "
                                         "a constructor for the tag")
    assert "yaml.safe_load" in (info.value.hint or "")
    assert not marker.exists()


def test_wrong_suffix_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"expected a \.yaml/\.yml/\.json file"):
        load_template_file(write(tmp_path, "t.txt", "name: x"))


BAD_FILES = [
    ("- a list", "", "expected a model template file (a mapping), got a list"),
    ("name: x", "", "missing required key 'meta_template'"),
    ("name: 'bad name'\nmeta_template: {round: [{role: HUMAN}]}", "name",
     "'bad name' is not a valid name"),
    ("name: x\nrenderer: vllm\nmeta_template: {round: [{role: HUMAN}]}", "renderer",
     "expected one of lm, api, hf_chat, got 'vllm'"),
    ("name: x\nmeta_template: {rounds: []}", "meta_template.rounds", "unknown key 'rounds'"),
    ("name: x\nmeta_template: {}", "meta_template", "a meta template needs a 'round' list"),
    ("name: x\nmeta_template: {round: []}", "meta_template.round",
     "expected a non-empty list of role dicts, got an empty list"),
    ("name: x\nmeta_template: {round: [{begin: a}]}", "meta_template.round[0]",
     "a role dict needs a 'role' key"),
    ("name: x\nmeta_template: {round: [{role: 3}]}", "meta_template.round[0].role",
     "expected a string, got a number (3)"),
    ("name: x\nmeta_template: {round: [{role: HUMAN, begin: [a, b]}]}",
     "meta_template.round[0].begin", "expected a string, got a list"),
    ("name: x\nmeta_template: {round: [{role: B, generate: 'yes'}]}",
     "meta_template.round[0].generate", "expected true or false"),
    ("name: x\nmeta_template: {round: [{role: A, generate: true}, {role: B, generate: true}]}",
     "meta_template.round[1]", "at most one role in 'round' may have generate: true"),
    ("name: x\nmeta_template: {round: [{role: A}], reserved_roles: [{role: A}]}",
     "meta_template.reserved_roles[0].role", "role 'A' is declared twice"),
    ("name: x\nmeta_template: {round: [{role: A}], reserved_roles: ['SYS']}",
     "meta_template.reserved_roles[0]", "expected a role dict (a mapping), got a string"),
    ("name: x\nmeta_template: {round: [{role: A}], begin: 1}", "meta_template.begin",
     "expected a string, got a number (1)"),
    ("name: x\nmeta_template: {round: [{role: A}], eos_token_id: '2'}",
     "meta_template.eos_token_id", "expected a token id or a non-empty list of token ids"),
    ("name: x\nrenderer: api\nmeta_template: {round: [{role: A, api_role: A}]}",
     "meta_template.round[0].api_role", "expected one of HUMAN, BOT, SYSTEM, got 'A'"),
    ("name: x\nrenderer: api\nmeta_template: {round: [{role: A}]}", "meta_template.round[0]",
     "role 'A' has no 'api_role', which the 'api' renderer needs"),
    ("name: x\nrenderer: api\nmeta_template: {round: ['sep', {role: A, api_role: HUMAN}]}",
     "meta_template.round[0]", "a bare string cannot be sent to the 'api' renderer"),
    ("name: x\naliases: x\nmeta_template: {round: [{role: A}]}", "aliases",
     "expected a list of names"),
    ("name: x\nprompter: {stop_words: [1]}\nmeta_template: {round: [{role: A}]}",
     "prompter.stop_words[0]", "expected a string"),
    ("name: x\ndefault_system: Hi\nmeta_template: {round: [{role: A}]}", "default_system",
     "the default system text must appear in meta_template.begin"),
]


@pytest.mark.parametrize(("text", "key_path", "message"), BAD_FILES,
                         ids=[b[1] or b[2][:20] for b in BAD_FILES])
def test_malformed_templates_name_file_and_key_path(tmp_path: Path, text: str, key_path: str,
                                                    message: str) -> None:
    path = write(tmp_path, "t.yaml", text + "\n")
    with pytest.raises(MetaTemplateError) as info:
        load_template_file(path)
    err = info.value
    assert err.config_path == str(path)
    assert err.key_path == (key_path or None)
    assert message in err.message
    assert str(err).startswith(f"{path}: ")


def test_unknown_key_hint_suggests_the_right_one(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "name: x\nmeta_template: {round: [{role: A, bgin: x}]}\n")
    with pytest.raises(MetaTemplateError) as info:
        load_template_file(path)
    assert info.value.key_path == "meta_template.round[0].bgin"
    assert info.value.hint == "did you mean 'begin'?"


def test_model_template_is_a_frozen_value() -> None:
    template = load_model_template("chatml")
    assert isinstance(template, ModelTemplate)
    with pytest.raises(AttributeError):
        template.name = "x"  # type: ignore[misc]
    assert template == load_template_file(REPO / "prompt_compiler" / "meta_templates" / "chatml.yaml")

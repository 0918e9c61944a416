"""Run OpenCompass's own embedding retrievers on the test corpus and print the ids they pick.

This is how the expected ids in tests/test_embed_retrieve.py were obtained. Run it with a
Python that has opencompass 0.5.4, sentence-transformers and faiss installed (none of them
are prompt_compiler dependencies), giving a sentence-transformers model folder:

    PYTHONPATH=/path/to/faiss python tools/embed_reference.py MODEL_DIR

OpenCompass round-trips every text through a GPT-2 tokenizer (``tokenizer_name``) before
embedding it; with no network, a byte-level BPE tokenizer trained here stands in for it
(byte-level BPE decodes back to the same text, so the embedded texts are the same).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from embed_corpus import INPUT_COLUMNS, TEST, TRAIN  # noqa: E402


def _byte_level_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = [" ".join(str(r[c]) for c in INPUT_COLUMNS) for r in TRAIN + TEST]
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
        "bos_token": "<|endoftext|>", "model_max_length": 1024}))


def main(model_dir: str) -> None:
    from datasets import Dataset, DatasetDict
    from opencompass.openicl.icl_dataset_reader import DatasetReader
    from opencompass.openicl.icl_retriever import (
        DPPRetriever,
        TopkRetriever,
        VotekRetriever,
    )

    class Data:  # what BaseRetriever reads: .reader, .train, .test
        def __init__(self) -> None:
            dd = DatasetDict(train=Dataset.from_list(TRAIN), test=Dataset.from_list(TEST))
            self.reader = DatasetReader(dd, input_columns=INPUT_COLUMNS, output_column="answer")
            self.train, self.test = dd["train"], dd["test"]

    # OpenCompass 0.5.4's DatasetEncoder calls tokenizer.encode_plus, which transformers 5
    # removed; under transformers 5 it is restored as the call it was an alias of.
    from transformers import PreTrainedTokenizerBase

    if not hasattr(PreTrainedTokenizerBase, "encode_plus"):
        PreTrainedTokenizerBase.encode_plus = PreTrainedTokenizerBase.__call__

    tok_dir = Path(tempfile.mkdtemp()) / "gpt2-like"
    _byte_level_tokenizer(tok_dir)
    common = {"sentence_transformers_model_name": model_dir, "tokenizer_name": str(tok_dir)}
    out: dict[str, object] = {}
    for name, cls, extra in [
        ("topk3", TopkRetriever, {"ice_num": 3}),
        ("topk3_batch4", TopkRetriever, {"ice_num": 3, "batch_size": 4}),
        ("votek3", VotekRetriever, {"ice_num": 3, "votek_k": 3}),
        ("dpp2", DPPRetriever, {"ice_num": 2, "candidate_num": 5}),
    ]:
        try:
            out[name] = cls(Data(), **common, **extra).retrieve()
        except Exception as exc:  # DPP fails in 0.5.4: record the error as OpenCompass raises it
            out[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])

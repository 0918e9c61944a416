import pickle

import pytest

from prompt_compiler import MissingFieldError, PromptCompilerError, UnknownRoleError


def test_message_names_every_location_field():
    err = UnknownRoleError(
        "role 'USER' is not declared by the meta template; declared: HUMAN, BOT",
        config_path="configs/x.py", dataset="gsm8k", key_path="infer_cfg.prompt_template", row=3,
        hint="use HUMAN",
    )
    assert str(err) == (
        "configs/x.py: dataset 'gsm8k', row 3, at infer_cfg.prompt_template: "
        "role 'USER' is not declared by the meta template; declared: HUMAN, BOT (hint: use HUMAN)"
    )
    assert isinstance(err, KeyError) and isinstance(err, PromptCompilerError)


def test_located_fills_only_unknown_fields():
    err = MissingFieldError("column 'q' is absent", row=2)
    err.located(dataset="d", row=9)
    assert (err.dataset, err.row) == ("d", 2)


def test_errors_survive_pickling():
    err = MissingFieldError("x", dataset="d", row=1, reference=("KeyError", "'x'"))
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is MissingFieldError
    assert str(back) == str(err) and back.reference == ("KeyError", "'x'")


def test_located_rejects_unknown_field():
    with pytest.raises(TypeError):
        PromptCompilerError("x").located(colour="red")

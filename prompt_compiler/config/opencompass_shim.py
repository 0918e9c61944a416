"""A temporary stand-in for the ``opencompass`` package, and the class-name tables.

OpenCompass configs import their building blocks::

    from opencompass.openicl.icl_prompt_template import PromptTemplate
    from opencompass.datasets import GSM8KDataset, gsm8k_postprocess
    from opencompass.models import HuggingFaceCausalLM

OpenCompass is not installed (and must not be needed), so while a config file is loaded
:func:`opencompass_shim` puts a meta-path finder in front of ``sys.meta_path`` that serves
*any* ``opencompass.*`` module. Every attribute of such a module is a :class:`Placeholder`
class that only remembers its qualified name; attributes of placeholders are placeholders
too (``from opencompass import datasets; datasets.GSM8KDataset`` works). The finder and
every module it created are removed again when the context exits, even on error, and any
``opencompass`` modules that were imported before are put back.

The tables below map the class names found in configs to what this project does with
them: prompt templates, retrievers and inferencers keep their class name as ``type``; a
model class name selects a renderer (``lm``, ``api`` or ``hf_chat``).
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

if TYPE_CHECKING:
    import importlib.abc

__all__ = [
    "AGENT_MODELS",
    "API_MODELS",
    "CHAT_TEMPLATE_MODELS",
    "INFERENCERS",
    "LM_MODELS",
    "PROMPT_TEMPLATES",
    "RENDERERS",
    "RETRIEVERS",
    "Placeholder",
    "Renderer",
    "is_placeholder",
    "opencompass_shim",
    "placeholder_name",
    "renderer_for_model_class",
]

SHIM_PACKAGE = "opencompass"

Renderer = Literal["lm", "api", "hf_chat"]
RENDERERS: tuple[Renderer, ...] = ("lm", "api", "hf_chat")

PROMPT_TEMPLATES = frozenset({"PromptTemplate", "RawPromptTemplate"})

RETRIEVERS = frozenset({
    "ZeroRetriever", "FixKRetriever", "RandomRetriever", "SlidingWindowRetriever",
    "BM25Retriever", "TopkRetriever", "VotekRetriever", "DPPRetriever", "MDLRetriever",
})

INFERENCERS = frozenset({
    "GenInferencer", "PPLInferencer", "CLPInferencer", "ChatInferencer",
    "PPLOnlyInferencer", "LLInferencer", "SCInferencer", "CoTInferencer", "AgentInferencer",
    "AttackInferencer", "GLMChoiceInferencer", "InferencePPLOnlyInferencer",
})

# Subclasses of OpenCompass's BaseModel whose prompts go through LMTemplateParser.
LM_MODELS = frozenset({
    "HuggingFace", "HuggingFaceCausalLM", "HuggingFaceBaseModel",
    "TurboMindModel", "TurboMindTisModel", "LmdeployPytorchModel", "LmdeployTisModel",
    "VLLM", "LightllmAPI", "InternLM", "InternTrain", "GLM130B",
    "AlayaLM", "ModelScope", "ModelScopeCausalLM",
    "QwenLM", "TurboMindAPIModel",
})

# Subclasses of OpenCompass's BaseAPIModel (APITemplateParser).
API_MODELS = frozenset({
    "OpenAI", "OpenAISDK", "OpenAISDKStreaming", "AI360GPT", "BaiChuan", "BaiChuan3",
    "BailingAPI", "BlueLMAPI", "ByteDance", "Claude", "ClaudeAllesAPIN", "ClaudeSDK",
    "DeepseekAPI", "Doubao", "ERNIEBot", "Gemini", "GeminiAllesAPIN", "Hunyuan", "KrGPT",
    "LightllmChatAPI", "MiniMax", "MiniMaxChatCompletionV2", "Mistral", "MoonShot",
    "Nanbeige", "PanGu", "Qwen", "Rendu", "SenseTime", "StepFun", "UniGPT", "XunFei",
    "XunFeiSpark", "Yayi", "YiAPI", "ZhiPuAI", "ZhiPuV2AI", "GeminiSDK", "LiteLLMAPI",
    "OpenAISDKResponse", "OpenAISDKRollout", "TeleChat", "TeleChatStream",
    # BaseModel subclasses that set an APITemplateParser (their generate() takes messages)
    "HuggingFaceChatGLM3", "Llama2", "Llama2Chat", "Mixtral", "LLaMA2AccessoryModel",
})

# BaseModel subclasses that apply the tokenizer's chat template to API-style messages.
CHAT_TEMPLATE_MODELS = frozenset({
    "HuggingFacewithChatTemplate", "TurboMindModelwithChatTemplate", "VLLMwithChatTemplate",
})


# Agent wrappers (opencompass/models/lagent.py, langchain.py): each prompt after the first is
# built from the model's own replies and tool results.
AGENT_MODELS = frozenset({"LagentAgent", "CodeAgent", "LangchainAgent"})


def renderer_for_model_class(name: str) -> Renderer | None:
    """The renderer a model class name selects, or ``None`` when the name is unknown.

    Args:
        name: A class name, or a dotted name (only the last component counts).
    """
    short = name.rsplit(".", 1)[-1]
    if short in CHAT_TEMPLATE_MODELS:
        return "hf_chat"
    if short in API_MODELS:
        return "api"
    if short in LM_MODELS:
        return "lm"
    return None


class _PlaceholderMeta(type):
    """Metaclass: attributes of a placeholder class are placeholder classes."""

    qualified_name: str

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = _make_placeholder(f"{cls.qualified_name}.{name}")
        type.__setattr__(cls, name, child)  # cache: the same name is the same object
        return child

    def __repr__(cls) -> str:
        return f"<opencompass placeholder {cls.qualified_name}>"


class Placeholder(metaclass=_PlaceholderMeta):
    """Base of the inert classes the shim hands out; instances keep their arguments."""

    qualified_name: ClassVar[str] = SHIM_PACKAGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


def _make_placeholder(qualified_name: str) -> type[Placeholder]:
    module, _, name = qualified_name.rpartition(".")
    namespace = {"__module__": module, "__qualname__": name, "qualified_name": qualified_name}
    return cast(type[Placeholder], _PlaceholderMeta(name, (Placeholder,), namespace))


def is_placeholder(value: object) -> bool:
    """Whether ``value`` is a placeholder class (or an instance of one)."""
    return (isinstance(value, type) and issubclass(value, Placeholder)) or isinstance(
        value, Placeholder
    )


def placeholder_name(value: object) -> str:
    """The qualified name a placeholder class (or instance) stands for."""
    if not is_placeholder(value):
        raise TypeError(f"not a placeholder: {value!r}")
    cls = cast(_PlaceholderMeta, value if isinstance(value, type) else type(value))
    return cls.qualified_name


class _ShimModule(types.ModuleType):
    """An ``opencompass.*`` module whose every public attribute is a placeholder."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = _make_placeholder(f"{self.__name__}.{name}")
        setattr(self, name, child)
        return child


class _ShimFinder:
    """Finds and creates ``opencompass`` and all its submodules as :class:`_ShimModule`."""

    def __init__(self, package_root: Path | None) -> None:
        self.package_root = package_root

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != SHIM_PACKAGE and not fullname.startswith(SHIM_PACKAGE + "."):
            return None
        loader = cast("importlib.abc.Loader", self)  # a loader by duck typing (no importlib.abc)
        spec = importlib.machinery.ModuleSpec(fullname, loader, is_package=True)
        if fullname == SHIM_PACKAGE and self.package_root is not None:
            # mmengine resolves ``with read_base(): from opencompass.configs.x import y``
            # against dirname(origin); the file itself is never read.
            spec.origin = str(self.package_root / "__init__.py")
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _ShimModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


# sys.meta_path and sys.modules are process-global: one load at a time holds the shim.
_LOCK = threading.RLock()
_active: list[_ShimFinder] = []


def _is_shim_name(name: str) -> bool:
    return name == SHIM_PACKAGE or name.startswith(SHIM_PACKAGE + ".")


@contextmanager
def opencompass_shim(package_root: Path | None = None) -> Iterator[None]:
    """Serve placeholder ``opencompass.*`` modules for the duration of the block.

    Re-entrant: a nested use (a config loading another) keeps the outer shim.

    Args:
        package_root: The folder standing in for the installed ``opencompass`` package,
            i.e. the parent of a ``configs/`` tree; lets ``from opencompass.configs...``
            base imports resolve. ``None`` leaves them unresolvable.
    """
    with _LOCK:
        if _active:
            yield
            return
        finder = _ShimFinder(package_root)
        saved = {name: mod for name, mod in sys.modules.items() if _is_shim_name(name)}
        for name in saved:
            del sys.modules[name]
        sys.meta_path.insert(0, finder)
        _active.append(finder)
        try:
            yield
        finally:
            _active.pop()
            sys.meta_path[:] = [f for f in sys.meta_path if f is not finder]
            for name in [n for n in sys.modules if _is_shim_name(n)]:
                del sys.modules[name]
            sys.modules.update(saved)

"""``yaml.safe_load`` with a bound on what aliases expand to (no "billion laughs").

PyYAML builds an aliased node once and shares it, so loading an alias bomb is quick; the
explosion comes later, when the config is walked, copied or printed. This loader composes the
node graph first, measures what it expands to (each ``*alias`` counted as a full copy of its
anchor; a scalar counts one node per 64 characters) and refuses a file whose aliases add more
than :attr:`~prompt_compiler.safety.limits.Limits.yaml_alias_nodes` nodes, or that refers to itself,
before anything is constructed.
"""

from __future__ import annotations

from typing import Any

from ..errors import LimitError
from . import limits

__all__ = ["load_yaml"]


def load_yaml(text: str) -> Any:
    """The value of one YAML document, as ``yaml.safe_load(text)`` returns it.

    Raises:
        LimitError: Aliases expand past the limit, or an alias refers to its own anchor.
        yaml.YAMLError: As ``yaml.safe_load``.
    """
    import yaml  # type: ignore[import-untyped,unused-ignore]

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, yaml)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: Any, yaml: Any) -> None:
    limit = limits.current().yaml_alias_nodes
    sizes: dict[int, int] = {}
    distinct = 0
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node, yaml))
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            line = node.start_mark.line + 1 if node.start_mark else 0
            raise LimitError(f"line {line}: a YAML alias refers to a node that contains it "
                             "(a recursive structure cannot be a config value)")
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1 + len(node.value) // 64
            distinct += sizes[key]
            continue
        distinct += 1
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node, yaml) if id(c) not in sizes)
    added = sizes[id(root)] - distinct
    if added > limit:
        raise LimitError(
            f"YAML aliases expand to {added:,} more nodes than the file holds (an alias bomb?); "
            + limits.describe("yaml_alias_nodes", limit))


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []

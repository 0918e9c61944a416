"""The package's identity, one place each: its version (the package, the CLI and manifests read
it) and the name it is installed by (every "install the extra" hint reads it)."""

__version__ = "0.1.0"

#: The distribution name on the package index (``pip install compile-prompts``); the import
#: package stays ``prompt_compiler`` (CHANGELOG.md, 0.1.0, says why).
DISTRIBUTION = "compile-prompts"


def install_hint(extra: str) -> str:
    """The command that installs an optional extra, e.g. ``pip install 'compile-prompts[ray]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"

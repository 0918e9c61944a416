"""Classifying and preparing message urls for the multimodal formats.

Two rule sets exist, one per API family, both taken from AgentScope 0.0.5's behaviour:

* OpenAI vision: a url with a scheme is kept when the whole string ends with an image
  suffix; a local file with such a suffix is inlined as a base64 data URL; nothing else
  is usable.
* DashScope multimodal: the media type is guessed from the text after the last dot; an
  existing local path gets a ``file://`` prefix, any other url is passed on unchanged.

Relative local paths are resolved against a caller-given base directory instead of the
process's working directory, so that results do not depend on where Python was started.
"""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import urlparse

from ..errors import DataError

__all__ = ["dashscope_media", "guess_media_type", "openai_image_url"]

_OPENAI_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")

# Extension lists of the DashScope rule (note: no gif among the images).
_IMAGE_EXTENSIONS = frozenset(
    "bmp dib icns ico jfif jpe jpeg jpg j2c j2k jp2 jpc jpf jpx apng png bw rgb rgba sgi "
    "tif tiff webp".split()
)
_AUDIO_EXTENSIONS = frozenset("amr wav 3gp 3gpp aac mp3 flac ogg".split())
_VIDEO_EXTENSIONS = frozenset("mp4 webm mkv flv avi mov wmv rmvb".split())


def _has_scheme(url: str) -> bool:
    return urlparse(url).scheme != ""


def _local_path(url: str, base_dir: Path) -> Path:
    path = Path(url)
    return path if path.is_absolute() else base_dir / path


def guess_media_type(url: str) -> str:
    """``image``, ``audio``, ``video`` or ``file`` from the text after the last dot.

    A query string is part of that text, so ``a.jpg?x=1`` is a ``file``.
    """
    extension = url.rsplit(".", 1)[-1].lower()
    if extension in _IMAGE_EXTENSIONS:
        return "image"
    if extension in _AUDIO_EXTENSIONS:
        return "audio"
    if extension in _VIDEO_EXTENSIONS:
        return "video"
    return "file"


def openai_image_url(url: str, base_dir: Path) -> str | None:
    """The ``image_url.url`` value for OpenAI vision models, or None when unusable.

    Web urls are kept only when the complete string ends with an image suffix
    (case-insensitive); local image files become ``data:image/<ext>;base64,...``.
    """
    is_image = url.lower().endswith(_OPENAI_IMAGE_SUFFIXES)
    if _has_scheme(url):
        return url if is_image else None
    path = _local_path(url, base_dir)
    if not (is_image and path.is_file()):
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read local image {url!r} (resolved to {path}): {exc}") from exc
    extension = urlparse(url).path.lower().rsplit(".", 1)[-1]
    return f"data:image/{extension};base64,{base64.b64encode(data).decode('ascii')}"


def dashscope_media(url: str, base_dir: Path) -> tuple[str, str]:
    """``(media type, value)`` for a DashScope multimodal content part.

    The caller keeps only ``image`` and ``audio``. An existing local path is prefixed with
    ``file://`` (the path itself stays as written, relative or absolute); a missing one is
    passed on unchanged, as AgentScope 0.0.5 does.
    """
    kind = guess_media_type(url)
    if kind in ("image", "audio") and not _has_scheme(url) and _local_path(url, base_dir).exists():
        return kind, "file://" + url
    return kind, url
